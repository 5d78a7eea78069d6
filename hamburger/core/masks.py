"""The one attention-mask builder: explicit boolean masks over KV slots.

Positions jump after merges and rows of a batch are padded, so no mask is ever inferred from positions:
every base forward (training, prefill, macro and verify steps) and the micro-step decoder get theirs here.
"""

from __future__ import annotations

import torch


FOREVER = 1 << 30  # the lifetime of a slot that never leaves the cache (`slot_mask`)


def slot_mask(valid: torch.Tensor, first_query: int = 0, queries: int | None = None,
              lifetime: torch.Tensor | None = None) -> torch.Tensor:
    """[B, K] valid key slots -> [B, 1, q, K] boolean attention mask.

    The queries are the slots ``first_query .. first_query + q - 1`` (``q`` = ``queries``, default: every slot
    from ``first_query`` on). Query i of row b attends to every valid slot of row b at or before its own slot,
    and always to itself (a padding query sees only itself, so it stays finite and is never read).
    ``lifetime`` [B, K] (a folding single tail's training layout, `packing.pack`): key slot k is seen only by query
    slots before k + lifetime[k], the slot where decoding takes it out of the cache (`FOREVER`: never).
    """
    keys = valid.shape[1]
    q = keys - first_query if queries is None else queries
    query_slot = torch.arange(first_query, first_query + q, device=valid.device)
    key_slot = torch.arange(keys, device=valid.device)
    causal = key_slot[None, :] <= query_slot[:, None]
    mask = causal[None] & valid[:, None, :]
    if lifetime is not None:
        mask = mask & ((query_slot[:, None] - key_slot[None, :])[None] < lifetime[:, None, :])
    mask = mask | (key_slot[None, :] == query_slot[:, None])[None]
    return mask[:, None]


MASK_READERS = ("sdpa", "eager")  # the attention implementations that read an explicit [B, 1, q, K] mask


def as_read_by(mask, implementation: str | None, dtype: torch.dtype):
    """``mask`` (or each of a mapping by layer type, `by_layer_type`) as the attention implementation
    ``implementation`` reads it: SDPA takes the boolean mask as it is; eager attention *adds* its mask to the scores,
    so there True becomes 0 and False the most negative ``dtype`` value (what transformers' own eager masks hold).
    A mask that is not boolean is returned as it is."""
    if isinstance(mask, dict):
        return {kind: as_read_by(m, implementation, dtype) for kind, m in mask.items()}
    if mask is None or implementation != "eager" or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, torch.finfo(dtype).min)


def sliding_window(base_config) -> tuple[int | None, bool]:
    """(window W, every layer slides?) of a transformers text config whose attention slides over the last W positions
    in some layers (Gemma 2 and 3, Qwen2 with ``use_sliding_window``) or all (Mistral, Phi-3): (None, False) where none
    does."""
    window = getattr(base_config, "sliding_window", None)
    if not window or getattr(base_config, "use_sliding_window", True) is False:
        return None, False
    types = getattr(base_config, "layer_types", None)
    if types is None:
        return window, True
    if "sliding_attention" not in types:
        return None, False
    return window, all(t == "sliding_attention" for t in types)


def sliding_layers(base_config) -> list[int]:
    """The indices of the layers whose attention slides (`sliding_window`): every layer, or those of type
    ``sliding_attention``; none where no layer slides."""
    window, every = sliding_window(base_config)
    if window is None:
        return []
    if every:
        return list(range(base_config.num_hidden_layers))
    return [i for i, kind in enumerate(base_config.layer_types) if kind == "sliding_attention"]


def by_layer_type(mask: torch.Tensor, base_config, query_positions: torch.Tensor,
                  key_positions: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
    """The [B, 1, q, K] slot mask as the base's layers read it. A base with a sliding window W (`sliding_window`) sees,
    in its sliding layers, only keys less than W positions before the query (transformers' rule; a merged slot sits at
    its last token's position), so those layers get ``mask`` with the older keys hidden: in place of ``mask`` where
    every layer slides, else as ``{"full_attention": mask, "sliding_attention": ...}``, the mapping transformers'
    stacks take. ``query_positions`` [B, q], ``key_positions`` [B, K]: rotary positions."""
    window, every = sliding_window(base_config)
    if window is None:
        return mask
    # (a query's own slot has its position, so each query still sees itself)
    slid = mask & ((query_positions[:, :, None] - key_positions[:, None, :]) < window)[:, None]
    return slid if every else {"full_attention": mask, "sliding_attention": slid}


def for_layer(mask, base_config, layer_idx: int):
    """The mask layer ``layer_idx`` of the base reads: its layer type's where ``mask`` maps types to masks
    (`by_layer_type`), else ``mask`` itself."""
    return mask[base_config.layer_types[layer_idx]] if isinstance(mask, dict) else mask
