"""A lean inference pass through a decoder stack: transformers' own math, without its module calls.

At batch 1 on a CPU, a forward of a small model over a few positions spends a good part of its time outside the
matrix products: nn.Module dispatch, keyword plumbing and hooks, repeated for every submodule of every layer.
`LeanStack` runs the same layers as plain calls: every projection as `F.linear` on the module's own weight and bias,
the norms' and the activation's own ``forward``, the model's own `apply_rotary_pos_emb` and attention function (the
one the stack is configured with), the stack's own rotary module. It serves inference forwards on a KV cache
(`HamburgerModel.base_forward`), adapters that act included (each LoRA layer then runs its own forward, or, where its
one set acts at every position of the forward, one product with its merged weight); training and everything else keep
transformers' modules.

Three of those parts have a cheaper form with the same arithmetic, each taken only where a probe on build gives
exactly (bitwise) the family's own result: RMS norms as one `F.rms_norm`; rotary embeddings with the sine's sign
folded in once per forward and the half rotation as one `roll` (Llama's ``rotate_half`` is a slice, a negation and a
concatenation); and SDPA attention with grouped key/value heads read in place (``enable_gqa``), where transformers
copies them to every query head on forwards of more than one position. On a 2-core CPU a 3-position forward of
SmolLM2-135M on a 300-slot cache went from 31.8 to 27.5 ms (experiments/2026-11-27-step-profile/).

It takes stacks whose layers have q/k/v/o projections and an MLP, gated (separate, or fused as Phi-3's) or not
(Nemotron, Arcee, Apertus); an MLP of other parts, a mixture of experts above all (Mixtral, Qwen2/3-MoE, OLMoE,
GLM-4.5, Granite MoE, gpt-oss, ...), runs as its own module. Norms before each block (Llama, Qwen2, Mistral, Gemma 1,
SmolLM3, Granite, Phi-3, StableLM, VaultGemma), on both sides of each (Gemma 2 and 3, HyperCLOVAX) or after each (OLMo
2, EXAONE 4), or one norm before attention and MLP side by side (Cohere); layers that rotate nothing (found by a probe:
SmolLM3's, EXAONE 4's and Command R7B's full-attention layers); query and key norms, head by head before the rotation
(Qwen3, Gemma 3) or after it (Hunyuan), or over the whole projection (OLMo 2); capped attention scores (Gemma 2); a
rotary table per layer type (Gemma 3); rotation of part of each head (Phi-4-mini, StableLM); Granite's multipliers on
the embeddings and on each block's output; and sliding layers, whose windows are in the masks it is given (one per
layer type, `masks.by_layer_type`). `LeanStack.for_stack` runs
one forward both ways on build: a stack whose outputs differ (a family with a part the pass does not know) keeps
transformers' path.
"""

from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers import DynamicCache
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from hamburger.core.lora import adapters_disabled
from hamburger.core.masks import as_read_by

# a decoder layer's norms (its parts beside self_attn and mlp) -> where each acts: (before attention, on attention's
# output, before the MLP, on the MLP's output)
NORM_LAYOUTS = {
    frozenset({"input_layernorm", "post_attention_layernorm"}):  # Llama, Qwen, Mistral, Gemma 1, ...
        ("input_layernorm", None, "post_attention_layernorm", None),
    frozenset({"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
               "post_feedforward_layernorm"}):  # Gemma 2 and 3: a norm on each side of each block
        ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"),
    frozenset({"post_attention_layernorm", "post_feedforward_layernorm"}):  # OLMo 2: norms on the blocks' outputs
        (None, "post_attention_layernorm", None, "post_feedforward_layernorm"),
    frozenset({"attention_layernorm", "feedforward_layernorm"}):  # Apertus: Llama's, named otherwise
        ("attention_layernorm", None, "feedforward_layernorm", None),
    frozenset({"input_layernorm", "post_attention_layernorm", "post_norm1", "post_norm2"}):  # HyperCLOVAX: both sides
        ("input_layernorm", "post_norm1", "post_attention_layernorm", "post_norm2"),
    frozenset({"input_layernorm", "pre_feedforward_layernorm"}):  # VaultGemma: Llama's, named as Gemma 2's
        ("input_layernorm", None, "pre_feedforward_layernorm", None),
    frozenset({"input_layernorm"}):  # Cohere: one norm, attention and MLP side by side on its output (`PARALLEL`)
        ("input_layernorm", None, None, None),
}
PARALLEL = frozenset({"input_layernorm"})  # the layouts whose MLP reads the attention's input, not its output
ATTENTION_PARTS = [{"q_proj", "k_proj", "v_proj", "o_proj"}, {"qkv_proj", "o_proj"}]  # (Phi-3: one fused projection)
KEY_NORMS = {"q_norm", "k_norm"}  # norms on the queries and keys before their rotation (Qwen3, Gemma 3, OLMo 2)
TURNED_KEY_NORMS = {"query_layernorm", "key_layernorm"}  # norms on each rotated head's query and key (Hunyuan)
MLP_NAMES = ("mlp", "block_sparse_moe")  # a decoder layer's MLP (Granite MoE's: its experts)
LAYER_TYPES = {"full_attention", "sliding_attention"}  # the layer types whose masks `masks.by_layer_type` makes
# a gated MLP (separate, or fused as Phi-3's), or one without a gate (Nemotron, Arcee, Apertus)
MLP_PARTS = [{"gate_proj", "up_proj", "down_proj", "act_fn"}, {"gate_up_proj", "down_proj", "activation_fn"},
             {"up_proj", "down_proj", "act_fn"}]
CHECK_TOLERANCE = 1e-4  # largest difference from transformers' own forward (relative to the outputs' scale) on build


def _linear(module: nn.Module, x: torch.Tensor, fuse: bool = False) -> torch.Tensor:
    """A projection without its module call (a `LoraLinear` with its adapters idle: its base layer's weight and bias;
    one whose adapters act runs its own ``forward``, gate and all, or with ``fuse``, where its one set acts at every
    position, one product with its `LoraLinear.merged_weight`). The parameters are read from the modules' own
    dicts: `nn.Module.__getattr__`, and a LoRA layer's `weight` property on top, cost 2% of a 4-position forward with
    LoRA layers on a 2-core CPU (experiments/2026-11-27-lean-reads/)."""
    inner = module._modules.get("base_layer")
    if inner is not None and module.enabled:
        if fuse and module.gate is None and module.sets == 1:
            return F.linear(x, module.merged_weight(), inner._parameters.get("bias"))
        return module.forward(x)
    params = (module if inner is None else inner)._parameters
    if "weight" not in params:  # (a projection keeping its weight elsewhere: the attribute, as transformers reads it)
        return F.linear(x, module.weight, module.bias)
    return F.linear(x, params["weight"], params.get("bias"))


def _children(module: nn.Module) -> set[str]:
    return {name for name, _ in module.named_children()}


def _norm_names(layer: nn.Module) -> frozenset[str]:
    """A decoder layer's parts beside its attention, its MLP and dropout modules (Phi-3's: nothing at inference)."""
    return frozenset(name for name, part in layer.named_children()
                     if name != "self_attn" and name not in MLP_NAMES and not isinstance(part, nn.Dropout))


def _mlp_of(layer: nn.Module) -> nn.Module | None:
    return next((part for name, part in layer.named_children() if name in MLP_NAMES), None)


@dataclass(slots=True)
class LeanLayer:
    """One decoder layer as `LeanStack` runs it, its parts found once when the pass is built.

    ``projections``, ``gate_up``: names, not modules, since a LoRA wrapping made later replaces the modules (Phi-3: one
    query/key/value projection, split by ``sizes``, and one gate/up projection; no ``gate_up``: an MLP of other parts,
    a mixture of experts, runs its own forward). ``norms``: the four places of `NORM_LAYOUTS` (None: no norm there).
    ``key_norms``: the query and key norms (None: none), and where they act (``key_norms_at``): over the whole
    projection ("projection": OLMo 2), over each head ("heads": Qwen3, Gemma 3) or over each head once it is rotated
    ("rotated": Hunyuan). ``kind``: the layer's type, whose rotary table and mask it reads (None: the stack has one
    type). ``rope``: whether it rotates at all (`_rotates`: not SmolLM3's layers without rotary embedding, nor EXAONE
    4's or Command R7B's full-attention layers). ``score_cap``: its cap on the attention scores (Gemma 2's), applied by
    the family's attention function. ``residual``: the factor on each block's output before it joins the residual
    stream (Granite's `residual_multiplier`; 1.0 elsewhere). ``parallel``: the MLP reads the attention's input and both
    outputs join the stream together (Cohere's `PARALLEL` layout)."""

    attn: nn.Module
    mlp: nn.Module
    projections: tuple[str, ...]
    sizes: list[int] | None
    gate_up: tuple[str, ...]
    act: object
    norms: tuple
    key_norms: tuple | None
    key_norms_at: str | None
    kind: str | None
    rope: bool
    score_cap: float | None
    residual: float
    parallel: bool

    @classmethod
    def of(cls, layer: nn.Module, kind: str | None, rope: bool) -> "LeanLayer":
        """The plan of ``layer`` (one `supported` takes), of type ``kind``, rotating or not (``rope``)."""
        attn, mlp = layer.self_attn, _mlp_of(layer)
        fused = attn._modules.get("qkv_proj")
        sizes = None
        if fused is not None:
            keys = attn.config.num_key_value_heads * attn.head_dim
            sizes = [attn.config.num_attention_heads * attn.head_dim, keys, keys]
        key_norms, key_norms_at = None, None
        if hasattr(attn, "q_norm"):
            key_norms = (_rms_norm(attn.q_norm), _rms_norm(attn.k_norm))
            key_norms_at = "heads" if attn.q_norm.weight.shape[-1] == attn.head_dim else "projection"
        elif hasattr(attn, "query_layernorm"):
            key_norms, key_norms_at = (_rms_norm(attn.query_layernorm), _rms_norm(attn.key_layernorm)), "rotated"
        if _children(mlp) not in MLP_PARTS:  # (a mixture of experts, or another MLP: its own forward)
            gate_up, act = (), None
        elif hasattr(mlp, "gate_up_proj"):  # (Phi-3)
            gate_up, act = ("gate_up_proj",), mlp.activation_fn
        else:
            gate_up, act = ("gate_proj", "up_proj") if hasattr(mlp, "gate_proj") else ("up_proj",), mlp.act_fn
        return cls(attn, mlp, ("q_proj", "k_proj", "v_proj") if fused is None else ("qkv_proj",), sizes, gate_up, act,
                   tuple(None if name is None else _rms_norm(getattr(layer, name))
                         for name in NORM_LAYOUTS[_norm_names(layer)]),
                   key_norms, key_norms_at, kind,
                   rope, getattr(attn, "attn_logit_softcapping", None),
                   float(getattr(layer, "residual_multiplier", 1.0)), _norm_names(layer) == PARALLEL)


def supported(stack: nn.Module) -> bool:
    """Whether ``stack`` (a decoder stack: `.layers`, `.norm`, `.rotary_emb`) has exactly the parts `LeanStack` runs."""
    if not all(hasattr(stack, a) for a in ("layers", "norm", "rotary_emb")):
        return False
    if not set(getattr(stack.config, "layer_types", None) or ()) <= LAYER_TYPES:
        return False
    for layer in stack.layers:
        attn, mlp = getattr(layer, "self_attn", None), _mlp_of(layer)
        if attn is None or mlp is None or _norm_names(layer) not in NORM_LAYOUTS:
            return False
        if not any(_children(attn) in (parts, parts | KEY_NORMS, parts | TURNED_KEY_NORMS)
                   for parts in ATTENTION_PARTS):
            return False
        if not hasattr(attn, "layer_idx"):
            return False
        family = sys.modules[type(attn).__module__]
        if not hasattr(family, "apply_rotary_pos_emb"):
            return False
        attention = stack.config._attn_implementation
        if attention not in ALL_ATTENTION_FUNCTIONS and not hasattr(family, "eager_attention_forward"):
            return False
    return True


class LeanStack:
    """The decoder stack ``stack`` of a base model, for inference forwards on a KV cache (see the module's doc)."""

    def __init__(self, stack: nn.Module):
        self.stack = stack
        config = stack.config
        family = sys.modules[type(stack.layers[0].self_attn).__module__]  # e.g. transformers' modeling_llama
        self.rotary = family.apply_rotary_pos_emb
        self.eager = getattr(family, "eager_attention_forward", None)
        self.attend = ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, self.eager)
        if config._attn_implementation == "eager":  # (it adds its mask: the boolean masks become additive)
            self.attend = _additive_masks(self.attend)
        # a rotary module with one table per layer type (Gemma 3's: its sliding layers rotate by another base)
        self.rotary_by_type = "layer_type" in inspect.signature(stack.rotary_emb.forward).parameters
        kinds = getattr(config, "layer_types", None) or [None] * len(stack.layers)
        self.rotary_types = sorted(set(kinds)) if self.rotary_by_type else [None]
        # the factor the stack puts on the embeddings it is given (Granite's `embedding_multiplier`)
        self.input_scale = float(getattr(stack, "embedding_multiplier", 1.0))
        param = next(stack.parameters())
        with torch.inference_mode():
            self.layers = [LeanLayer.of(layer, kind, self._rotates(layer, kind, param))
                           for layer, kind in zip(stack.layers, kinds)]
            self.final_norm = _rms_norm(stack.norm)
            self.rotation = (_rotation if _probe_rotation(self.rotary, stack, param, self.rotary_types)
                             else self._family_rotation)
            self.rotates_part = _rotates_part_only(self.rotary, stack, param, self.rotary_types[0])
            attn, heads = stack.layers[0].self_attn, config.num_attention_heads
            if config._attn_implementation == "sdpa" and _probe_sdpa(self.attend, attn, heads, param):
                self.attend = _sdpa_in_place(self.attend)

    def _rotates(self, layer: nn.Module, kind: str | None, param: torch.Tensor) -> bool:
        """Whether ``layer``'s attention turns its queries and keys by position at all: its output on the same inputs
        at positions 0, 1, 2 and at 0, 5, 17 (other gaps, so a rotation shows) differs."""
        stack = self.stack
        x = torch.randn(1, 3, stack.config.hidden_size, generator=torch.Generator().manual_seed(0)).to(param.device,
                                                                                                   param.dtype)
        causal = torch.ones(3, 3, dtype=torch.bool, device=param.device).tril()[None, None]
        mask, outputs = as_read_by(causal, stack.config._attn_implementation, x.dtype), []
        with adapters_disabled(layer):
            for at in ([0, 1, 2], [0, 5, 17]):
                positions = torch.tensor([at], device=param.device)
                tables = (stack.rotary_emb(x, positions, kind) if self.rotary_by_type
                          else stack.rotary_emb(x, positions))
                outputs.append(layer.self_attn(hidden_states=x, position_embeddings=tables, attention_mask=mask,
                                               position_ids=positions)[0])
        return not torch.equal(*outputs)

    def _family_rotation(self, cos: torch.Tensor, sin: torch.Tensor):
        """The family's own `apply_rotary_pos_emb`, as a function of (q, k). Where its tables cover only the first
        channels of a head and the family's function takes only those (StableLM's; Phi-3's splits the heads itself),
        the first channels rotated and the rest passed on, as the family's attention does."""
        if not self.rotates_part:
            return lambda q, k: self.rotary(q, k, cos, sin)
        n = cos.shape[-1]

        def rotate(q: torch.Tensor, k: torch.Tensor):
            q_turned, k_turned = self.rotary(q[..., :n], k[..., :n], cos, sin)
            return torch.cat((q_turned, q[..., n:]), -1), torch.cat((k_turned, k[..., n:]), -1)
        return rotate

    @classmethod
    def for_stack(cls, stack: nn.Module) -> "LeanStack | None":
        """A `LeanStack` for ``stack`` if it has parts it runs and computes what transformers computes, else None (a
        family whose own functions take other arguments than the pass gives them fails to run: None too)."""
        if not supported(stack):
            return None
        try:
            lean = cls(stack)
            return lean if lean.agrees() else None
        except (RuntimeError, TypeError, ValueError, IndexError, AttributeError):
            return None

    def agrees(self) -> bool:
        """One 5-position forward, then one more position on the cache, both ways, at positions spread over up to 512:
        the same outputs?"""
        stack = self.stack
        param = next(stack.parameters())
        d = stack.config.hidden_size
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(1, 6, d, generator=generator).to(param.device, param.dtype)
        # positions far apart (as after merges), so a rotation applied where the family applies none, or applied
        # differently, changes the outputs well beyond the tolerance
        span = max(6, min(getattr(stack.config, "max_position_embeddings", None) or 512, 512))
        positions = torch.linspace(0, span - 1, 6).round().long().to(param.device)[None]
        causal = torch.ones(6, 6, dtype=torch.bool, device=param.device).tril()[None, None]
        kinds, outputs = set(getattr(stack.config, "layer_types", None) or ()), []
        with torch.inference_mode(), adapters_disabled(stack):  # (it serves forwards where no adapter acts)
            for lean in (False, True):
                cache, last = DynamicCache(config=stack.config), None
                for at in (slice(0, 5), slice(5, 6)):
                    # (one per layer type, as `HamburgerModel.base_forward` gives them where some layers slide, but
                    # no window: every layer reads all 6 positions, its rotation included)
                    mask = causal[:, :, at, :at.stop]
                    mask = {kind: mask for kind in kinds} if len(kinds) > 1 else mask
                    args = (x[:, at], positions[:, at], mask, cache)
                    last = self(*args, taps=())[0] if lean else stack(
                        inputs_embeds=args[0], position_ids=args[1], past_key_values=cache, use_cache=True,
                        attention_mask=as_read_by(mask, stack.config._attn_implementation, x.dtype)).last_hidden_state
                outputs.append(last.float())
        scale = outputs[0].abs().max().clamp(min=1.0)
        return bool(((outputs[0] - outputs[1]).abs().max() / scale) <= CHECK_TOLERANCE)

    def __call__(self, inputs_embeds: torch.Tensor, position_ids: torch.Tensor, attention_mask, cache,
                 taps: tuple[int, ...], fuse: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """(final normed hidden [B, S, d], the outputs of the layers ``taps``, in order); the cache gets the new
        keys and values. ``attention_mask``: the explicit mask transformers' stack would get (a boolean one, or one
        per layer type, `masks.by_layer_type`). ``fuse``: LoRA layers whose one set acts at every position (no gate)
        read their merged weight (`LoraLinear.merged_weight`), the same function up to rounding at the cost of one
        plain projection. A cache that reads some layers its own way (``cache.attention_hook``: a `FullHeadCache`,
        some heads over the whole history, `engine/full_heads.py`; a `QuantizedHistoryCache`, a store of 8- or 4-bit
        slots beside the cache, `engine/quantized.py`) attends for the layers it ``attends``."""
        stack = self.stack
        rotations = {kind: self.rotation(*(stack.rotary_emb(inputs_embeds, position_ids, kind) if self.rotary_by_type
                                           else stack.rotary_emb(inputs_embeds, position_ids)))
                     for kind in self.rotary_types}
        # (eager attention: the forward's mask made additive once, not at every layer; a cache's own masks still are)
        attention_mask = as_read_by(attention_mask, stack.config._attn_implementation, inputs_embeds.dtype)
        by_type = isinstance(attention_mask, dict)  # (a mask per layer type: some layers slide)
        h = inputs_embeds if self.input_scale == 1.0 else inputs_embeds * self.input_scale
        shape, tapped = inputs_embeds.shape[:-1], []
        hook = getattr(cache, "attention_hook", None)  # a cache that attends for some layers itself
        for i, layer in enumerate(self.layers):
            attn, (before_attention, after_attention, before_mlp, after_mlp) = layer.attn, layer.norms
            projections = attn._modules
            x = h if before_attention is None else before_attention(h)
            if layer.sizes is None:
                q, k, v = (_linear(projections[name], x, fuse) for name in layer.projections)
            else:  # (Phi-3: queries, then keys, then values)
                q, k, v = _linear(projections[layer.projections[0]], x, fuse).split(layer.sizes, -1)
            if layer.key_norms_at == "projection":  # (OLMo 2: over all heads at once)
                q, k = layer.key_norms[0](q), layer.key_norms[1](k)
            heads = (*shape, -1, attn.head_dim)
            q, k, v = (t.view(heads).transpose(1, 2) for t in (q, k, v))
            if layer.key_norms_at == "heads":  # (Qwen3, Gemma 3)
                q, k = layer.key_norms[0](q), layer.key_norms[1](k)
            if layer.rope:  # (SmolLM3's layers without a positional embedding: `use_rope` False)
                q, k = rotations[layer.kind if self.rotary_by_type else None](q, k)
            if layer.key_norms_at == "rotated":  # (Hunyuan)
                q, k = layer.key_norms[0](q), layer.key_norms[1](k)
            mask = attention_mask[layer.kind] if by_type else attention_mask
            attend = self.attend if layer.score_cap is None else functools.partial(self.attend, softcap=layer.score_cap)
            if hook is not None and hook.attends(attn.layer_idx):
                out = hook.attend(attend, attn, q, k, v, mask, attn.scaling)
            else:
                k, v = cache.update(k, v, attn.layer_idx)
                out = attend(attn, q, k, v, mask, dropout=0.0, scaling=attn.scaling)[0]
            out = _linear(projections["o_proj"], out.reshape(*shape, -1).contiguous(), fuse)
            out = out if after_attention is None else after_attention(out)
            h = h + (out if layer.residual == 1.0 else out * layer.residual)
            if not layer.parallel:  # (Cohere's MLP reads the attention's input x)
                x = h if before_mlp is None else before_mlp(h)
            out = _mlp(layer, x, fuse)
            out = out if after_mlp is None else after_mlp(out)
            h = h + (out if layer.residual == 1.0 else out * layer.residual)
            if i in taps:
                tapped.append(h)
        return self.final_norm(h), tapped


def _mlp(layer: LeanLayer, x: torch.Tensor, fuse: bool) -> torch.Tensor:
    """``layer``'s MLP on ``x``: its projections as plain calls (`_linear`), or, for an MLP of other parts (a
    mixture of experts: a router and its experts), the module's own forward."""
    if not layer.gate_up:
        out = layer.mlp(x)
        return out[0] if isinstance(out, tuple) else out  # (families whose experts also return the router's logits)
    parts = layer.mlp._modules
    if len(layer.gate_up) == 2:
        gated = layer.act.forward(_linear(parts[layer.gate_up[0]], x, fuse)) * _linear(parts[layer.gate_up[1]], x,
                                                                                        fuse)
    elif layer.gate_up[0] == "up_proj":  # (no gate)
        gated = layer.act.forward(_linear(parts["up_proj"], x, fuse))
    else:  # (Phi-3: the gate, then up)
        gate, up = _linear(parts[layer.gate_up[0]], x, fuse).chunk(2, -1)
        gated = up * layer.act.forward(gate)
    return _linear(parts["down_proj"], gated, fuse)


def _rms_norm(norm: nn.Module):
    """The norm as one `F.rms_norm` on its weight and epsilon where that gives exactly the module's output on a probe,
    else the module's own ``forward``."""
    weight, eps = norm._parameters.get("weight"), getattr(norm, "variance_epsilon", None)
    if weight is None or weight.dim() != 1 or not isinstance(eps, float):
        return norm.forward

    def rms_norm(x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, weight.shape, norm._parameters["weight"], eps)

    probe = torch.randn(2, 3, weight.shape[0], generator=torch.Generator().manual_seed(0)).to(weight.device,
                                                                                            weight.dtype)
    return rms_norm if torch.equal(rms_norm(probe), norm.forward(probe)) else norm.forward


def _rotation(cos: torch.Tensor, sin: torch.Tensor):
    """Llama's rotary embedding as a function of (q, k): ``x * cos + rotate_half(x) * sin`` with the sign of
    ``rotate_half``'s negated half folded into the sine once, so a rotation is one `roll` (the same products and sums,
    so the same bits)."""
    half = cos.shape[-1] // 2
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    signed = torch.cat((-sin[..., :half], sin[..., half:]), -1)
    return lambda q, k: (q * cos + q.roll(half, -1) * signed, k * cos + k.roll(half, -1) * signed)


def _random_heads(attn: nn.Module, heads: int, param: torch.Tensor, generator: torch.Generator, new: int, slots: int):
    """Probe inputs of an attention layer with ``heads`` query heads: queries [1, heads, new, head_dim], keys and
    values [1, kv heads, slots, head_dim], on the stack's device and dtype."""
    kv_heads = heads // getattr(attn, "num_key_value_groups", 1)

    def draw(n: int, length: int) -> torch.Tensor:
        return torch.randn(1, n, length, attn.head_dim, generator=generator).to(param.device, param.dtype)
    return draw(heads, new), draw(kv_heads, slots), draw(kv_heads, slots)


def _probe_heads(stack: nn.Module, param: torch.Tensor, kind: str | None):
    """Random queries and keys of the stack's first layer for 3 positions, and the stack's rotary tables there (those
    of layer type ``kind`` where its rotary module tells types apart; None: it does not)."""
    attn = stack.layers[0].self_attn
    q, k, _ = _random_heads(attn, stack.config.num_attention_heads, param, torch.Generator().manual_seed(0), 3, 3)
    positions = torch.arange(5, 8, device=param.device)[None]
    return q, k, *(stack.rotary_emb(q, positions) if kind is None else stack.rotary_emb(q, positions, kind))


def _probe_rotation(rotary, stack: nn.Module, param: torch.Tensor, kinds: list[str | None]) -> bool:
    """Whether `_rotation` gives exactly the family's ``rotary`` on the stack's own cos/sin for 3 positions (those of
    each layer type of ``kinds``, `_probe_heads`)."""
    return all(_rotates_alike(rotary, stack.layers[0].self_attn, *_probe_heads(stack, param, kind)) for kind in kinds)


def _rotates_part_only(rotary, stack: nn.Module, param: torch.Tensor, kind: str | None) -> bool:
    """Whether the stack's rotary tables cover only the first channels of a head and the family's ``rotary`` refuses
    whole heads with them (it takes the rotated channels only, StableLM's)."""
    q, k, cos, sin = _probe_heads(stack, param, kind)
    if cos.shape[-1] == q.shape[-1]:
        return False
    try:
        rotary(q, k, cos, sin)
    except RuntimeError:
        return True
    return False


def _rotates_alike(rotary, attn: nn.Module, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                   sin: torch.Tensor) -> bool:
    if cos.shape[-1] != attn.head_dim:  # (a partial rotary embedding)
        return False
    return all(torch.equal(a, b) for a, b in zip(_rotation(cos, sin)(q, k), rotary(q, k, cos, sin)))


def _additive_masks(attend):
    """``attend`` (an eager attention function, which adds its mask to the scores) given each boolean mask in the
    additive form it reads (`masks.as_read_by`)."""

    def run(module: nn.Module, q, k, v, mask, *args, **kwargs):
        return attend(module, q, k, v, as_read_by(mask, "eager", q.dtype), *args, **kwargs)
    return run


def _sdpa_in_place(attend):
    """``attend`` (transformers' SDPA attention), but on more than one query position reading grouped key/value heads
    in place (``enable_gqa``) where transformers copies them to every query head. (On one position transformers
    already reads them in place, its own way, whose bits differ from ``enable_gqa``'s: that one stays.)"""

    def run(module: nn.Module, q, k, v, mask, dropout: float = 0.0, scaling: float | None = None, **kwargs):
        if q.shape[2] == 1 or q.shape[1] == k.shape[1]:
            return attend(module, q, k, v, mask, dropout=dropout, scaling=scaling, **kwargs)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scaling, enable_gqa=True)
        return out.transpose(1, 2).contiguous(), None
    return run


def _probe_sdpa(attend, attn: nn.Module, heads: int, param: torch.Tensor) -> bool:
    """Whether `_sdpa_in_place` gives exactly transformers' ``attend`` on forwards of 2 and 5 positions over a
    masked 9-slot cache (False, too, where this device's SDPA refuses ``enable_gqa`` with a mask)."""
    generator = torch.Generator().manual_seed(0)
    for new in (2, 5):
        q, k, v = _random_heads(attn, heads, param, generator, new, 9)
        mask = torch.ones(1, 1, new, 9, dtype=torch.bool, device=param.device).tril(9 - new)
        mask[..., 2] = False
        try:
            ours = _sdpa_in_place(attend)(attn, q, k, v, mask, scaling=attn.scaling)[0]
        except RuntimeError:
            return False
        if not torch.equal(ours, attend(attn, q, k, v, mask, dropout=0.0, scaling=attn.scaling)[0]):
            return False
    return True
