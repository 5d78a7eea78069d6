"""Full heads: a few key/value heads of a folding cache keep every slot the fold takes out.

A verify_fold cache (`engine/folding.py`) drops older answer tokens' one-token slots from every layer. Copying a
number or a name from early in an answer is done by a few attention heads, and once the token's slot is gone no
reading can bring it back (sampled answers then spike on failed copies). With *full heads*, chosen (layer, key/value
head) pairs keep the whole history and the rest read the fold (cf. the retrieval heads of DuoAttention, Xiao et al.
2024, which keep a full cache for a few heads and a short one for the rest).

`FullHeadCache` is a `SlotCache` whose layers with a full head are split by head: the cache itself (what the fold
folds, compacts and measures) holds the other key/value heads of those layers, and a second `SlotCache`, the *store*,
holds the full heads of those layers with its own validity, which a fold never touches. Both get every new slot; the
store drops only rejected drafts and padding (so at every slot count it holds what lossless verify's cache holds), and
compacts by its own holes. In a split layer (`LeanStack` calls `attend`), the full heads' query heads attend over
the store, the others over the cache, and their outputs go back in head order. So the bytes are real: the cache holds
the fold's slots for every head but the full ones, measured; a row's `kv_slots` counts whole-slot equivalents (its
store slots weigh the full heads' share of a slot's bytes).

No full heads is the plain fold (no `FullHeadCache` is made); every head full is lossless verify, token for token.
The heads are the checkpoint's (`HamburgerConfig.full_heads`, chosen per base by `hamburger heads`); they need
the lean stack and the dynamic cache.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from hamburger.core.config import check_full_heads
from hamburger.core.masks import for_layer
from hamburger.engine.cache import SlotCache, SpareSlotsLayer
from hamburger.errors import HamburgerError


def parse_full_heads(spec: str) -> list[tuple[int, int]]:
    """``LAYER:HEAD,LAYER:HEAD...`` (or ``none``) -> (layer, key/value head) pairs, unchecked against a base."""
    spec = spec.strip()
    if spec in ("", "none"):
        return []
    try:
        return [(int(layer), int(head)) for layer, head in (part.split(":") for part in spec.split(","))]
    except ValueError as e:
        raise HamburgerError(f"full heads are LAYER:HEAD pairs separated by commas (or none), got {spec!r}") from e


@contextlib.contextmanager
def head_channels(lean, heads, base_config):
    """Inside it, the `LeanStack` ``lean`` reads a two-channel attention mask [B, 2, S, K]: the query heads of
    ``heads`` ((layer, key/value head) pairs) channel 1, every other head channel 0. A teacher-forced reading with
    full heads in one uncached forward (channel 0 the fold's visibility, channel 1 the causal mask), as the
    engine's `FullHeadCache` reads them decoding."""
    attend = lean.attend
    per_kv = base_config.num_attention_heads // base_config.num_key_value_heads
    channels = {}
    for layer, g in heads:
        channels.setdefault(layer, torch.zeros(base_config.num_attention_heads, dtype=torch.long))
        channels[layer][g * per_kv:(g + 1) * per_kv] = 1
    none = torch.zeros(base_config.num_attention_heads, dtype=torch.long)

    def by_head(module, q, k, v, mask, *args, **kwargs):
        channel = channels.get(module.layer_idx, none).to(mask.device)
        return attend(module, q, k, v, mask.index_select(1, channel), *args, **kwargs)

    lean.attend = by_head
    try:
        yield
    finally:
        lean.attend = attend


@dataclass
class _Split:
    """One split layer's head indices: its full and other key/value heads, their query heads, and the order that puts
    [full query heads, other query heads] back in head order (None: already in it)."""

    position: int  # the layer's place in the store
    full: torch.Tensor
    rest: torch.Tensor
    q_full: torch.Tensor
    q_rest: torch.Tensor
    order: torch.Tensor | None


class FullHeadCache(SlotCache):
    """A dynamic `SlotCache` whose ``heads`` ((layer, key/value head) pairs) keep every slot a fold takes out (see the
    module's doc)."""

    def __init__(self, base_config, batch_size: int, device=None, heads=()):
        super().__init__(base_config, batch_size, device)
        self.heads = heads = check_full_heads(heads, base_config)
        if not heads:
            raise HamburgerError("a full-head cache needs at least one full head")
        kv_heads = base_config.num_key_value_heads
        per_kv = base_config.num_attention_heads // kv_heads
        self.splits: dict[int, _Split] = {}
        for layer in sorted({layer for layer, _ in heads}):
            full = [g for lay, g in heads if lay == layer]
            rest = [g for g in range(kv_heads) if g not in full]
            q_of = lambda gs: [g * per_kv + j for g in gs for j in range(per_kv)]  # noqa: E731
            order = torch.tensor(q_of(full) + q_of(rest)).argsort()
            identity = bool((order == torch.arange(len(order))).all())
            self.splits[layer] = _Split(len(self.splits), *(torch.tensor(x, dtype=torch.long, device=device)
                                                             for x in (full, rest, q_of(full), q_of(rest))),
                                        None if identity else order.to(device))
        self.share = len(heads) / (base_config.num_hidden_layers * kv_heads)  # of a slot's bytes
        self.store = SlotCache(base_config, batch_size, device)
        self.store.kv.layers = [SpareSlotsLayer() for _ in self.splits]
        self.forgetting = self.store.forgetting = []  # (sliding layers keep every slot here)
        self.store_mask: torch.Tensor | None = None  # the store's mask for this forward's queries (`extend`)
        self.kv.attention_hook = self  # (what `LeanStack` finds on the cache it is given)

    # ------------------------------------------------------------------ attention
    def attends(self, layer_idx: int) -> bool:
        return layer_idx in self.splits

    def read_through(self, mask: torch.Tensor):
        """Full heads split a layer's heads between two caches, which only the lean pass does."""
        raise HamburgerError("full heads need the lean pass (a base whose layers `core/lean.py` runs)")

    def attend(self, attend, module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor,
               scaling: float) -> torch.Tensor:
        """A split layer's attention output [B, S, H, d] for queries ``q`` [B, H, S, d] and new keys and values ``k``,
        ``v`` [B, kv heads, S, d] (written to the store and the cache): ``attend`` (the stack's attention function)
        over the store for the full heads, over the cache with ``mask`` for the others."""
        split = self.splits[module.layer_idx]
        held = self.store.kv.layers[split.position].update(k.index_select(1, split.full), v.index_select(1, split.full))
        store_mask = for_layer(self.store_mask, self.text_config, module.layer_idx)
        out = attend(module, q.index_select(1, split.q_full), *held, store_mask, dropout=0.0, scaling=scaling)[0]
        k, v = self.kv.update(k.index_select(1, split.rest), v.index_select(1, split.rest), module.layer_idx)
        if split.rest.numel():
            rest = attend(module, q.index_select(1, split.q_rest), k, v, mask, dropout=0.0, scaling=scaling)[0]
            out = torch.cat([out, rest], 2)
        return out if split.order is None else out.index_select(2, split.order)

    # ------------------------------------------------------------------ slots
    def extend(self, new_valid: torch.Tensor, positions: torch.Tensor | None = None):
        self.store_mask = self.store.extend(new_valid, positions)
        return super().extend(new_valid, positions)

    def reject_last(self, row: int, count: int) -> None:
        super().reject_last(row, count)
        self.store.reject_last(row, count)

    def drop_last(self, n: int) -> None:
        super().drop_last(n)
        self.store.drop_last(n)

    def select_rows(self, rows: torch.Tensor) -> None:
        super().select_rows(rows)
        self.store.select_rows(rows)

    def merge(self, other: "SlotCache") -> None:
        if not isinstance(other, FullHeadCache) or other.heads != self.heads:
            raise HamburgerError("rows with other full heads cannot join this batch")
        super().merge(other)
        self.store.merge(other.store)

    def compact_if_holey(self) -> None:
        super().compact_if_holey()
        self.store.compact_if_holey()

    def compact(self) -> None:
        super().compact()
        self.store.compact()

    # ------------------------------------------------------------------ measuring
    def kv_bytes(self) -> int:
        return super().kv_bytes() + self.store.kv_bytes()

    def kv_slots(self) -> list[int]:
        """Whole-slot equivalents each row holds: its slots in the cache, plus the slots only its store holds weighed
        by the full heads' share of a slot's bytes (rounded)."""
        return [round(main + (whole - main) * self.share)
                for main, whole in zip(super().kv_slots(), self.store.kv_slots())]

    def row_bytes(self) -> list[int]:
        per_slot = self.bytes_per_slot()
        return [slots * per_slot for slots in self.kv_slots()]

    def ordinary_bytes(self, slots: int) -> int:
        return slots * self.bytes_per_slot()

    def bytes_per_slot(self) -> int:
        """Bytes one whole slot of one row takes across all layers (the cache's and the store's heads together)."""
        slots = self.batch_size * self.num_slots
        if not slots:
            return 0
        store_slots = self.batch_size * self.store.num_slots
        return super().kv_bytes() // slots + (self.store.kv_bytes() // store_slots if store_slots else 0)
