"""The three grafted modules: compositional embedder, micro-step decoder and stop head."""

from __future__ import annotations

import copy
import inspect

import torch
import torch.nn.functional as F
from torch import nn

from hamburger.core.config import HamburgerConfig
from hamburger.core.masks import as_read_by, slot_mask
from hamburger.errors import HamburgerError


def base_decoder_stack(base: nn.Module) -> nn.Module:
    """The decoder stack of a HF causal LM (``model`` for Llama, Qwen2, Mistral, Gemma...)."""
    stack = getattr(base, "base_model", base)
    if not hasattr(stack, "layers") or not hasattr(stack, "norm"):
        raise HamburgerError(f"{type(base).__name__}: HAMburger needs a decoder stack with Llama-style `.layers` and "
                             f"`.norm` (its taps, micro-step decoder and caches are built from them)")
    return stack


COMPILE_REGIONS = ("stack", "layer")  # what `HamburgerModel.compile_training` compiles as one graph


def layerwise_compiled(stack: nn.Module, **options) -> nn.Module:
    """``stack`` (`base_decoder_stack`) with each decoder layer under ``torch.compile(layer, **options)`` and the
    rest (embedding lookup, rotary tables, masks, final norm) eager: a shallow copy that shares every parameter, buffer
    and submodule with ``stack``, which stays as it was. The layers run one code, so the compiler makes it once and
    reuses it for the others (parameters are graph inputs, not constants): a graph per layer kind and grad mode rather
    than the whole stack's, at the cost of fusions across layer boundaries."""
    layered = copy.copy(stack)
    layered._modules = dict(stack._modules)
    layered._modules["layers"] = nn.ModuleList(torch.compile(layer, **options) for layer in stack.layers)
    return layered


class CompositionalEmbedder(nn.Module):
    """Smashes the embeddings of one token group (1..max_steps tokens) into one input vector.

    One token passes through unchanged. For k >= 2 tokens: a query from the mean embedding attends
    over the k embeddings, each concatenated with a learned per-slot vector; the attention output,
    projected, is added to the mean. The output projection starts at zero, so an untrained
    embedder returns the plain mean.
    """

    def __init__(self, cfg: HamburgerConfig):
        super().__init__()
        d, s = cfg.hidden_size, cfg.slot_dim
        self.heads = cfg.merger_heads
        self.slot = nn.Parameter(torch.randn(cfg.max_steps, s) * 0.02)
        self.query = nn.Linear(d, d)
        self.key_value = nn.Linear(d + s, 2 * d)
        self.out = nn.Linear(d, d)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, embeddings: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
        """embeddings [G, K, d] (slot i of group g in row g, padded past its size), sizes [G] -> [G, d]."""
        g, k, d = embeddings.shape
        valid = torch.arange(k, device=embeddings.device)[None, :] < sizes[:, None]
        mean = (embeddings * valid[..., None]).sum(1) / sizes[:, None].to(embeddings.dtype)
        if k == 1:
            return mean
        h, dh = self.heads, d // self.heads
        q = self.query(mean).view(g, h, 1, dh)
        slots = self.slot[:k].to(embeddings.dtype).expand(g, k, -1)
        key, value = self.key_value(torch.cat([embeddings, slots], -1)).view(g, k, 2, h, dh).unbind(2)
        attn = F.scaled_dot_product_attention(q, key.transpose(1, 2), value.transpose(1, 2),
                                              attn_mask=valid[:, None, None, :])
        merged = mean + self.out(attn.reshape(g, d))
        return torch.where((sizes >= 2)[:, None], merged, mean)


class MicroStepDecoder(nn.Module):
    """A few decoder layers of the base model's own class that emit tokens 2..k of a group.

    Input for one group: [f_1..f_m, e(t_1)..e(t_{k-1})] at local positions 0..m+k-2, causal. The
    output at the position of e(t_j), after the decoder's final norm, predicts token j+1.
    """

    def __init__(self, base: nn.Module, cfg: HamburgerConfig):
        super().__init__()
        stack = base_decoder_stack(base)
        text_config = base.config.get_text_config() if hasattr(base.config, "get_text_config") else base.config
        config = copy.deepcopy(text_config)
        n = cfg.decoder_layers
        first = max(len(stack.layers) - n, 0)  # the base layer the first one copies (`copy_last`)
        _set_depth(config, first + n)
        if hasattr(config, "use_sliding_window"):
            config.use_sliding_window = False
        self.config = config
        layer_cls = type(stack.layers[0])
        # each layer is built as the base layer it copies is (families that mix dense and expert MLPs, GLM-4.5's or
        # DeepSeek's, choose by the layer's index), then numbered from 0 for the decoder's own cache
        self.layers = nn.ModuleList(layer_cls(config, layer_idx=first + i) for i in range(n))
        _number(self.layers)
        _set_depth(config, n)
        self.norm = copy.deepcopy(stack.norm)
        self.rotary = type(stack.rotary_emb)(config=config)
        # a family whose rotary tables differ by layer type (Gemma 3) is asked for the full-attention layers' ones
        by_type = "layer_type" in inspect.signature(self.rotary.forward).parameters
        self.rotary_args = ("full_attention",) if by_type else ()
        reference = next(base.parameters())
        self.layers.to(reference.device, reference.dtype)
        if cfg.decoder_init == "copy_last" and n <= len(stack.layers):
            for mine, theirs in zip(self.layers, stack.layers[-n:]):
                mine.load_state_dict(theirs.state_dict())
        else:
            std = getattr(config, "initializer_range", 0.02)
            for module in self.layers.modules():
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, std=std)
                    if module.bias is not None:
                        nn.init.zeros_(module.bias)
        self.to(reference.device, reference.dtype)
        for p in self.parameters():
            p.requires_grad_(True)

    def forward(self, x: torch.Tensor, cache=None, start: int = 0) -> torch.Tensor:
        """x [N, S, d] at local positions start..start+S-1 (after ``start`` cached ones) -> normed [N, S, d]."""
        n, s, _ = x.shape
        positions = torch.arange(start, start + s, device=x.device)[None].expand(n, -1)
        position_embeddings = self.rotary(x, positions, *self.rotary_args)
        mask = slot_mask(torch.ones(1, start + s, dtype=torch.bool, device=x.device), start) if s > 1 else None
        mask = as_read_by(mask, self.config._attn_implementation, x.dtype)
        for layer in self.layers:
            out = layer(x, attention_mask=mask, position_ids=positions, past_key_values=cache,
                        use_cache=cache is not None, position_embeddings=position_embeddings)
            x = out[0] if isinstance(out, tuple) else out
        return self.norm(x)

    def grow(self, n: int) -> None:
        """Deepen to ``n`` layers without changing any output (block expansion, as in LLaMA Pro).

        Each new layer is a copy of the layer it follows, spread evenly over the stack, with the two
        projections that write the residual stream (attention output, MLP down) zeroed: it starts as
        the identity, and training makes it useful. Caches are keyed by layer index, so the layers are
        renumbered.
        """
        old = len(self.layers)
        if n < old:
            raise HamburgerError(f"cannot grow the micro-step decoder from {old} to {n} layers (fewer)")
        if n == old:
            return
        layers = []
        for j, layer in enumerate(self.layers):
            layers.append(layer)
            for _ in range((j + 1) * (n - old) // old - j * (n - old) // old):
                layers.append(_identity_copy(layer))
        self.layers = nn.ModuleList(layers)
        _number(self.layers)
        _set_depth(self.config, n)


def _number(layers: nn.ModuleList) -> None:
    """Layer i's parts (its attention, where caches are keyed) know it as layer i."""
    for i, layer in enumerate(layers):
        for module in layer.modules():
            if hasattr(module, "layer_idx"):
                module.layer_idx = i


def _set_depth(config, n: int) -> None:
    """The decoder's own transformers config: n layers, every one full attention."""
    config.num_hidden_layers = n
    if getattr(config, "layer_types", None) is not None:
        config.layer_types = ["full_attention"] * n


RESIDUAL_WRITERS = ("o_proj", "out_proj", "down_proj", "fc2")  # HF names of the attention and MLP output projections


def _identity_copy(layer: nn.Module) -> nn.Module:
    """A copy of a pre-norm decoder layer whose attention and MLP add nothing to the residual stream."""
    twin = copy.deepcopy(layer)
    writers = [m for name, m in twin.named_modules() if name.rsplit(".", 1)[-1] in RESIDUAL_WRITERS]
    if len(writers) != 2 or not all(isinstance(m, nn.Linear) for m in writers):
        raise HamburgerError(f"cannot grow a micro-step decoder of {type(layer).__name__}: expected one attention "
                             f"and one MLP output projection named among {RESIDUAL_WRITERS}")
    with torch.no_grad():
        for m in writers:
            m.weight.zero_()
            if m.bias is not None:
                m.bias.zero_()
    return twin


class StopHead(nn.Module):
    """A small MLP; its logit means "this token ends the group".

    It reads the hidden state that predicted the token and, with ``stop_sees_token``, the token's own
    embedding too: whether the next token is easy depends much on which token was just chosen.
    """

    def __init__(self, cfg: HamburgerConfig):
        super().__init__()
        self.sees_token = cfg.stop_sees_token
        width = cfg.hidden_size * (2 if self.sees_token else 1)
        self.net = nn.Sequential(nn.Linear(width, cfg.stop_hidden), nn.SiLU(), nn.Linear(cfg.stop_hidden, 1))

    def forward(self, hidden: torch.Tensor, token_embedding: torch.Tensor) -> torch.Tensor:
        """hidden [..., d] and the chosen token's embedding [..., d] -> stop logits [...]."""
        x = torch.cat([hidden, token_embedding.to(hidden.dtype)], -1) if self.sees_token else hidden
        return self.net(x).squeeze(-1)


class Drafter(nn.Module):
    """What drafts in the verify modes: a micro-step decoder and a stop head of the model's shapes.

    By default those are the model's own (`Drafter.of`), trained in HAMburger's layout to continue a group after a
    slot. A checkpoint may carry a second pair trained for verify's inputs alone (the unchanged base's features at the
    position that predicted the pending token, then the pending token and the drafts), its ``verify_drafter``.
    """

    def __init__(self, decoder: MicroStepDecoder, stop_head: StopHead):
        super().__init__()
        self.decoder, self.stop_head = decoder, stop_head

    @classmethod
    def of(cls, model: nn.Module) -> "Drafter":
        """The model's own micro-step decoder and stop head (shared, not copied)."""
        return cls(model.decoder, model.stop_head)

    @classmethod
    def copy_of(cls, model: nn.Module) -> "Drafter":
        """A trainable copy of the model's own pair (its parameters apart from the model's)."""
        return cls(copy.deepcopy(model.decoder), copy.deepcopy(model.stop_head))
