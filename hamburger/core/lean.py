"""A lean inference pass through a Llama-family decoder stack: transformers' own math, without its module calls.

At batch 1 on a CPU, a forward of a small model over a few positions spends a good part of its time outside the
matrix products: nn.Module dispatch, keyword plumbing and hooks, repeated for every submodule of every layer.
`LeanStack` runs the same layers as plain calls: every projection as `F.linear` on the module's own weight and bias,
the norms' and the activation's own ``forward``, the model's own `apply_rotary_pos_emb` and attention function (the
one the stack is configured with), the stack's own rotary module. It serves inference forwards on a KV cache
(`HamburgerModel.base_forward`); training, adapters that act and everything else keep transformers' modules.

It takes only stacks whose layers have exactly Llama's parts (two norms, q/k/v/o projections, a gated MLP, no sliding
window), and `LeanStack.for_stack` runs one forward both ways on build: a stack whose outputs differ (a family that
scales its embeddings inside the stack, say) keeps transformers' path.
"""

from __future__ import annotations

import sys

import torch
from torch import nn
from torch.nn import functional as F
from transformers import DynamicCache
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from hamburger.core.lora import adapters_disabled

LAYER_PARTS = {"self_attn", "mlp", "input_layernorm", "post_attention_layernorm"}
ATTENTION_PARTS = {"q_proj", "k_proj", "v_proj", "o_proj"}
MLP_PARTS = {"gate_proj", "up_proj", "down_proj", "act_fn"}
CHECK_TOLERANCE = 1e-4  # largest difference from transformers' own forward (relative to the outputs' scale) on build


def _linear(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A projection without its module call (a `LoraLinear` is only taken here with its adapters idle: its base layer's
    weight and bias). The parameters are read from the modules' own dicts: `nn.Module.__getattr__`, and a LoRA layer's
    `weight` property on top, cost 2% of a 4-position forward with LoRA layers on a 2-core CPU
    (experiments/2026-11-27-lean-reads/)."""
    inner = module._modules.get("base_layer")
    params = (module if inner is None else inner)._parameters
    if "weight" not in params:  # (a projection that keeps its weight elsewhere: the attribute, as transformers reads it)
        return F.linear(x, module.weight, module.bias)
    return F.linear(x, params["weight"], params.get("bias"))


def _children(module: nn.Module) -> set[str]:
    return {name for name, _ in module.named_children()}


def supported(stack: nn.Module) -> bool:
    """Whether ``stack`` (a decoder stack: `.layers`, `.norm`, `.rotary_emb`) has exactly the parts `LeanStack` runs."""
    if not all(hasattr(stack, a) for a in ("layers", "norm", "rotary_emb")):
        return False
    for layer in stack.layers:
        attn, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
        if attn is None or mlp is None or _children(layer) != LAYER_PARTS:
            return False
        if _children(attn) != ATTENTION_PARTS or _children(mlp) != MLP_PARTS:
            return False
        if getattr(attn, "sliding_window", None) or not hasattr(attn, "layer_idx"):
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
        family = sys.modules[type(stack.layers[0].self_attn).__module__]  # e.g. transformers' modeling_llama
        self.rotary = family.apply_rotary_pos_emb
        self.eager = getattr(family, "eager_attention_forward", None)

    @classmethod
    def for_stack(cls, stack: nn.Module) -> "LeanStack | None":
        """A `LeanStack` for ``stack`` if it has Llama's parts and computes what transformers computes, else None."""
        if not supported(stack):
            return None
        lean = cls(stack)
        return lean if lean.agrees() else None

    def agrees(self) -> bool:
        """One 5-position forward, then one more position on the cache, both ways: the same outputs?"""
        stack = self.stack
        param = next(stack.parameters())
        d = stack.config.hidden_size
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(1, 6, d, generator=generator).to(param.device, param.dtype)
        positions = torch.arange(6, device=param.device)[None]
        causal = torch.ones(6, 6, dtype=torch.bool, device=param.device).tril()[None, None]
        outputs = []
        with torch.inference_mode(), adapters_disabled(stack):  # (it serves forwards where no adapter acts)
            for lean in (False, True):
                cache, last = DynamicCache(config=stack.config), None
                for at in (slice(0, 5), slice(5, 6)):
                    args = (x[:, at], positions[:, at], causal[:, :, at, :at.stop], cache)
                    last = self(*args, taps=())[0] if lean else stack(
                        inputs_embeds=args[0], position_ids=args[1], attention_mask=args[2], past_key_values=cache,
                        use_cache=True).last_hidden_state
                outputs.append(last.float())
        scale = outputs[0].abs().max().clamp(min=1.0)
        return bool(((outputs[0] - outputs[1]).abs().max() / scale) <= CHECK_TOLERANCE)

    def __call__(self, inputs_embeds: torch.Tensor, position_ids: torch.Tensor, attention_mask: torch.Tensor,
                 cache, taps: tuple[int, ...]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """(final normed hidden [B, S, d], the outputs of the layers ``taps``, in order); the cache gets the new
        keys and values. ``attention_mask``: the explicit mask transformers' stack would get."""
        stack = self.stack
        attend = ALL_ATTENTION_FUNCTIONS.get_interface(stack.config._attn_implementation, self.eager)
        cos_sin = stack.rotary_emb(inputs_embeds, position_ids)
        h, shape, tapped = inputs_embeds, inputs_embeds.shape[:-1], []
        for i, layer in enumerate(stack.layers):
            attn, mlp = layer.self_attn, layer.mlp
            x = layer.input_layernorm.forward(h)
            heads = (*shape, -1, attn.head_dim)
            q, k, v = (_linear(p, x).view(heads).transpose(1, 2) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
            q, k = self.rotary(q, k, *cos_sin)
            k, v = cache.update(k, v, attn.layer_idx)
            out = attend(attn, q, k, v, attention_mask, dropout=0.0, scaling=attn.scaling)[0]
            h = h + _linear(attn.o_proj, out.reshape(*shape, -1).contiguous())
            x = layer.post_attention_layernorm.forward(h)
            gated = mlp.act_fn.forward(_linear(mlp.gate_proj, x)) * _linear(mlp.up_proj, x)
            h = h + _linear(mlp.down_proj, gated)
            if i in taps:
                tapped.append(h)
        return stack.norm.forward(h), tapped
