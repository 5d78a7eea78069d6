"""`LeanStack`: transformers' decoder stack run as plain calls for inference forwards on a KV cache."""

import sys
import types

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from hamburger.core import lean as lean_module
from hamburger.core.lean import LeanStack, supported
from hamburger.core.lora import add_lora, adapters_disabled, lora_layers, lora_modules, remove_lora
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.cache import SlotCache
from tests.helpers import tiny_hamburger


def forwards(model, lean: bool, merged: bool = False):
    """A 7-token prompt, then 3 positions on its cache (the second optionally marked merged) -> both outputs."""
    model.lean = lean
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(4, 100, (2, 10), generator=gen)
    cache = SlotCache(model.base.config, 2, model.device)
    outs = []
    with torch.inference_mode():
        for at in (slice(0, 7), slice(7, 10)):
            n = at.stop - at.start
            mask = cache.extend(torch.ones(2, n, dtype=torch.bool))
            slots = torch.zeros(2, n, dtype=torch.bool)
            slots[:, 1] = merged and at.start == 7
            outs.append(model.base_forward(model.embed(ids[:, at]), torch.arange(at.start, at.stop)[None].repeat(2, 1),
                                           mask, cache.kv, merged_slots=slots if merged else None))
    return outs


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "olmo2", "phi3"])
def test_lean_forwards_equal_transformers_stack(family):
    """Final states and taps of a prompt and of later positions on its cache: exactly transformers' (same ops).
    Phi-3's fused projections with adapters acting at a merged slot too (the default targets name them)."""
    model = tiny_hamburger(family, lora_scope="merged")
    assert supported(base_decoder_stack(model.base))
    assert model._lean_stack() is not None
    for (final, feats), (ref_final, ref_feats) in zip(forwards(model, True), forwards(model, False)):
        assert torch.equal(final, ref_final) and torch.equal(feats, ref_feats)
    if family == "phi3":
        add_lora(model.base, r=2, alpha=4.0)
        assert {name.rsplit(".", 1)[-1] for name, _ in lora_modules(model.base)} == {
            "qkv_proj", "o_proj", "gate_up_proj", "down_proj"}
        with torch.no_grad():
            for _, m in lora_modules(model.base):
                m.lora_B.normal_(0, 0.5)
        lean, plain = forwards(model, True, merged=True), forwards(model, False, merged=True)
        assert not torch.equal(lean[1][0], forwards(model, True)[1][0])  # (the adapters act)
        for (final, feats), (ref_final, ref_feats) in zip(lean, plain):
            torch.testing.assert_close(final, ref_final, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(feats, ref_feats, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_cheaper_parts_are_taken_where_they_give_the_same_bits(family, monkeypatch):
    """Llama and Qwen2 get one `F.rms_norm` per norm, the rotation by `roll` and grouped SDPA heads read in place (the
    equality of whole forwards is the test above); a norm or a rotary embedding with other arithmetic keeps its own."""
    stack = base_decoder_stack(tiny_hamburger(family).base)
    assert stack.config._attn_implementation == "sdpa" and stack.config.num_key_value_heads < 4  # (grouped heads)
    lean = LeanStack(stack)
    assert lean.rotation is lean_module._rotation
    assert lean.attend.__qualname__.startswith("_sdpa_in_place")
    norms = [layer.norms for layer in lean.layers]
    assert all(n[0].__name__ == n[2].__name__ == "rms_norm" and n[1] is n[3] is None for n in norms)  # (no post-norms)
    assert lean.final_norm.__name__ == "rms_norm"
    norm = stack.layers[1].post_attention_layernorm
    norm.forward = types.MethodType(lambda self, x: type(self).forward(self, x) * 1.5, norm)  # (1 + w)-style, say
    rotary = lean.rotary
    family_module = sys.modules[type(stack.layers[0].self_attn).__module__]
    other = LeanStack(stack)
    assert other.layers[1].norms[2] == norm.forward and other.layers[1].norms[0].__name__ == "rms_norm"
    monkeypatch.setattr(family_module, "apply_rotary_pos_emb", lambda q, k, cos, sin: rotary(q, k, cos, -sin))
    assert LeanStack(stack).rotation != lean_module._rotation  # (another convention)
    sdpa = F.scaled_dot_product_attention

    def no_grouped_heads(*args, enable_gqa=False, **kwargs):  # a device whose SDPA refuses them
        if enable_gqa:
            raise RuntimeError("enable_gqa is not supported here")
        return sdpa(*args, **kwargs)
    monkeypatch.setattr(F, "scaled_dot_product_attention", no_grouped_heads)
    assert not LeanStack(stack).attend.__qualname__.startswith("_sdpa_in_place")


@pytest.mark.parametrize("scope", ["all", "after_fold"])
def test_adapters_acting_at_every_position_read_their_merged_weight(scope):
    """Where one adapter set acts at every position of a forward (``all``; ``after_fold`` once a row has folded), each
    LoRA layer reads W + (alpha / r) B A, built once and rebuilt when an adapter changes: the adapted outputs up to
    rounding. ``fuse_adapters = False`` runs the adapters' products; a gated forward (some positions only) always does."""
    model = tiny_hamburger("llama", lora_scope=scope)
    add_lora(model.base, r=2, alpha=4.0)
    layers = lora_layers(model.base)
    with torch.no_grad():
        for m in layers:
            m.lora_B.normal_(0, 0.5)
    folded = torch.ones(2, dtype=torch.bool) if scope == "after_fold" else None

    def run(fuse: bool, prompt_gated: bool = False):
        """A 7-token prompt (gated off under after_fold unless ``prompt_gated``), then 3 positions on its cache."""
        model.fuse_adapters = fuse
        ids = torch.randint(4, 100, (2, 10), generator=torch.Generator().manual_seed(0))
        cache, outs = SlotCache(model.base.config, 2, model.device), []
        with torch.inference_mode():
            for at in (slice(0, 7), slice(7, 10)):
                n = at.stop - at.start
                before = folded if at.start or prompt_gated else None
                mask = cache.extend(torch.ones(2, n, dtype=torch.bool))
                outs.append(model.base_forward(model.embed(ids[:, at]), torch.arange(at.start, at.stop)[None].repeat(
                    2, 1), mask, cache.kv, merged_before=before)[0])
        return outs

    plain = run(False)
    assert all("_merged" not in m.__dict__ for m in layers)
    fused = run(True)
    for a, b in zip(fused, plain):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    merged = [m.__dict__["_merged"][1] for m in layers]
    assert all(torch.equal(w, m.base_layer.weight + m.lora_B @ m.lora_A * m.scaling) for w, m in zip(merged, layers))
    run(True)
    assert all(m.__dict__["_merged"][1] is w for w, m in zip(merged, layers)), "built once"
    with torch.no_grad():
        layers[0].lora_B.mul_(-1.0)
    for a, b in zip(run(True), run(False)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert layers[0].__dict__["_merged"][1] is not merged[0] and layers[1].__dict__["_merged"][1] is merged[1]
    if scope == "after_fold":  # a forward with one row folded and one not: gated, the adapters' own products
        folded[1] = False
        for m in layers:
            m.__dict__.pop("_merged")
        run(True, prompt_gated=True)
        assert all("_merged" not in m.__dict__ for m in layers)


def test_lean_path_serves_inference_forwards_with_or_without_acting_adapters(monkeypatch):
    """Inference on a cache takes it, adapters that act (a merged slot) included, and its outputs equal transformers'
    modules' exactly; a training forward or ``lean = False`` keep transformers' modules."""
    model = tiny_hamburger("llama", lora_scope="merged")
    add_lora(model.base, r=2, alpha=4.0)
    with torch.no_grad():
        for _, m in lora_modules(model.base):
            m.lora_B.normal_(0, 0.5)
    assert model._lean_stack() is not None  # (built and checked before counting)
    calls = []
    call = LeanStack.__call__
    monkeypatch.setattr(LeanStack, "__call__", lambda self, *a, **k: calls.append(1) or call(self, *a, **k))
    lean = forwards(model, True)
    assert len(calls) == 2
    assert all(torch.equal(a[0], b[0]) for a, b in zip(lean, forwards(model, False)))
    calls.clear()
    adapted = forwards(model, True, merged=True)
    assert len(calls) == 2, "the step whose slot is merged runs its adapters in the lean stack too"
    plain = forwards(model, False, merged=True)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(adapted, plain))
    assert not torch.allclose(adapted[1][0], lean[1][0], atol=1e-4), "the test needs adapters that act"
    calls.clear()
    model.base_forward(model.embed(torch.tensor([[5, 6]])), torch.arange(2)[None],
                       torch.ones(1, 1, 2, 2, dtype=torch.bool).tril(), training=True)
    assert not calls


def test_a_stack_with_other_parts_or_other_outputs_keeps_transformers():
    stack = base_decoder_stack(tiny_hamburger("llama").base)
    assert LeanStack.for_stack(stack) is not None
    stack.layers[1].extra_norm = nn.Identity()  # a part the lean layer would not run
    assert not supported(stack) and LeanStack.for_stack(stack) is None
    del stack.layers[1].extra_norm
    plain = type(stack).forward  # a family that scales its inputs inside the stack: outputs differ
    stack.forward = types.MethodType(lambda self, inputs_embeds, **kw: plain(self, inputs_embeds=inputs_embeds * 2,
                                                                             **kw), stack)
    assert supported(stack) and LeanStack.for_stack(stack) is None


def test_adapter_switches_follow_wrapping_and_unwrapping():
    """The LoRA layers the switches remember are renewed whenever layers are wrapped or unwrapped."""
    model = tiny_hamburger("llama")
    assert lora_layers(model.base) == []
    add_lora(model.base, r=2, alpha=4.0)
    layers = lora_layers(model.base)
    assert len(layers) == len(list(lora_modules(model.base))) > 0
    with adapters_disabled(model.base):
        assert not any(m.enabled for m in layers)
    assert all(m.enabled for m in layers)
    remove_lora(model.base)
    assert lora_layers(model.base) == []
