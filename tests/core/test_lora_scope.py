"""LoRA adapters gated per position, and `lora_scope: merged` (the base adapted at merged slots only)."""

import pytest
import torch

from hamburger.core.base import BaseInfo, weights_fingerprint
from hamburger.core.checkpoint import load_checkpoint, save_checkpoint
from hamburger.errors import HamburgerError
from hamburger.engine.generate import Generation, generate
from hamburger.core.lora import adapters_gated, add_lora, lora_modules
from hamburger.engine.sampling import DecodingConfig
from hamburger.train.config import TrainConfig
from tests.helpers import PROMPTS, assert_engine_matches_training_forward, hf_greedy, tiny_base, tiny_hamburger


def adapted(model, seed=0, std=0.5):
    """Put non-zero LoRA adapters on the model's base (as after training)."""
    add_lora(model.base, r=2, alpha=4.0)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, module in lora_modules(model.base):
            module.lora_B.copy_(torch.randn(module.lora_B.shape, generator=gen) * std)
    return model


def test_gate_zero_is_the_base_and_gate_one_the_adapter():
    model = tiny_hamburger("llama", seed=2)
    ids = torch.tensor([[1, 20, 30, 40, 50, 60]])
    base_logits = model.base(ids).logits
    adapted(model)
    full = model.base(ids).logits
    assert not torch.allclose(full, base_logits, atol=1e-3)
    with adapters_gated(model.base, torch.zeros(1, 6)):
        assert torch.equal(model.base(ids).logits, base_logits)
    with adapters_gated(model.base, torch.ones(1, 6)):
        assert torch.equal(model.base(ids).logits, full)
    gate = torch.tensor([[0, 0, 0, 1, 0, 0]], dtype=torch.bool)
    with adapters_gated(model.base, gate):
        mixed = model.base(ids).logits
    assert torch.equal(mixed[:, :3], base_logits[:, :3])  # causal: nothing before the gated position changes
    assert not torch.allclose(mixed[:, 3:], base_logits[:, 3:], atol=1e-3)
    assert all(m.gate is None for _, m in lora_modules(model.base))  # the gate does not outlive the block


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_merged_scope_at_confidence_one_is_the_base(family, char_tokenizer):
    """With adapters at merged slots only, confidence 1.0 (nothing merges) decodes the unadapted base exactly."""
    scoped = adapted(tiny_hamburger(family, lora_scope="merged"))
    everywhere = adapted(tiny_hamburger(family))
    pristine = tiny_base(family)
    differs = False
    for prompt in PROMPTS:
        expected = hf_greedy(pristine, prompt, 24)
        res = generate(scoped, char_tokenizer, prompt, DecodingConfig(max_new_tokens=24, confidence=1.0))
        assert res.token_ids == expected and res.groups == [1] * res.tokens
        other = generate(everywhere, char_tokenizer, prompt, DecodingConfig(max_new_tokens=24, confidence=1.0))
        differs |= other.token_ids != expected
    assert differs, "adapters applied everywhere must change the base (else this test proves nothing)"


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_merged_scope_engine_matches_training_forward(family, char_tokenizer):
    """The engine adapts exactly the slots the training forward adapts: same logits token by token."""
    model = adapted(tiny_hamburger(family, seed=3, lora_scope="merged"), std=0.2)
    assert_engine_matches_training_forward(model, char_tokenizer)
    # A batch in which one row merges and the other does not: the unmerged row is the base's own.
    prompts = [PROMPTS[0], PROMPTS[1]]
    plain = [hf_greedy(tiny_base(family, seed=3), p, 12) for p in prompts]
    out = Generation(model, char_tokenizer, prompts, [DecodingConfig(max_new_tokens=12, confidence=0.5),
                                                      DecodingConfig(max_new_tokens=12, confidence=1.0)]).run()
    assert out[1].token_ids == plain[1]


def test_merged_scope_checkpoint_keeps_adapters_apart(tmp_path, char_tokenizer):
    model = adapted(tiny_hamburger("llama", seed=3, lora_scope="merged"))
    base_dir = tmp_path / "base"
    tiny_base("llama", seed=3).save_pretrained(base_dir)
    char_tokenizer.save_pretrained(base_dir)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(tiny_base("llama", seed=3)))
    ckpt = save_checkpoint(model, tmp_path / "ckpt", info)
    loaded, tokenizer, _ = load_checkpoint(ckpt, merge_adapters=True)  # what inference asks for
    assert loaded.config.lora_scope == "merged" and list(lora_modules(loaded.base))  # not folded in
    cfg = DecodingConfig(max_new_tokens=16, confidence=0.5)
    a, b = generate(model, char_tokenizer, PROMPTS[0], cfg), generate(loaded, tokenizer, PROMPTS[0], cfg)
    assert (a.token_ids, a.groups) == (b.token_ids, b.groups)


def test_merged_scope_needs_lora_training():
    with pytest.raises(HamburgerError, match="lora_scope"):
        TrainConfig(base_mode="frozen", lora_scope="merged").validate()
    with pytest.raises(HamburgerError, match="lora_scope"):
        TrainConfig(lora_scope="sometimes").validate()
    TrainConfig(base_mode="lora", lora_scope="merged").validate()
