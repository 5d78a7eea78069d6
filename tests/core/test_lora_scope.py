"""LoRA adapters gated per position, and the scoped adapters: `lora_scope: merged` (the base adapted at merged
slots only), `after_merge` (at every slot from a row's first merged slot on) and `merged_and_after` (two adapter
sets: one at merged slots, one at the other slots from the row's first merge on)."""

import pytest
import torch

from hamburger.core.base import BaseInfo, weights_fingerprint
from hamburger.core.checkpoint import load_checkpoint, save_checkpoint
from hamburger.errors import HamburgerError
from hamburger.engine.generate import Generation, generate
from hamburger.core.lora import adapter_sets, adapters_gated, add_adapter_sets, lora_modules
from hamburger.core.packing import TrainBatch
from hamburger.engine.sampling import DecodingConfig, knob_gates
from hamburger.train.config import TrainConfig
from tests.helpers import PROMPTS, adapted, assert_engine_matches_training_forward, hf_greedy, tiny_base, tiny_hamburger


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


SCOPED = ["merged", "after_merge", "merged_and_after", "after_fold"]  # (after_fold: merged slots start it too)


def test_inference_without_merged_slots_skips_the_adapters():
    """No slot adapts: the adapters are switched off for the forward (no LoRA matmuls), outputs unchanged."""
    model = adapted(tiny_hamburger("llama", seed=2, lora_scope="merged"))
    embeds = model.base.get_input_embeddings()(torch.tensor([[1, 20, 30, 40]]))
    positions = torch.arange(4)[None]
    mask = torch.ones(4, 4, dtype=torch.bool).tril()[None, None]
    seen = []
    hooks = [m.register_forward_hook(lambda m, i, o: seen.append((m.enabled, m.gate is not None)))
             for _, m in lora_modules(model.base)]
    with torch.no_grad():
        idle, _ = model.base_forward(embeds, positions, mask)
    assert seen and all(not enabled for enabled, _ in seen)
    seen.clear()
    zero_gate, _ = model.base_forward(embeds, positions, mask)  # training (grad on): the zero gate, adapters on
    assert seen and all(enabled and gated for enabled, gated in seen)
    assert torch.equal(idle, zero_gate.detach())
    seen.clear()
    with torch.no_grad():
        merged, _ = model.base_forward(embeds, positions, mask, merged_slots=torch.tensor([[0, 0, 1, 0]]))
    assert seen and all(enabled and gated for enabled, gated in seen)
    assert torch.equal(merged[:, :2], idle[:, :2]) and not torch.allclose(merged[:, 2:], idle[:, 2:], atol=1e-4)
    for h in hooks:
        h.remove()


def test_adapter_gate_of_each_scope():
    merged = torch.tensor([[0, 0, 1, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0]], dtype=torch.bool)
    gate = tiny_hamburger("llama", lora_scope="merged").adapter_gate(merged.shape, "cpu", merged)
    assert torch.equal(gate, merged)
    after = tiny_hamburger("llama", lora_scope="after_merge")
    assert after.adapter_gate(merged.shape, "cpu", merged).int().tolist() == [[0, 0, 1, 1, 1, 1, 1], [0] * 7]
    assert not after.adapter_gate((2, 3), "cpu").any()  # nothing merged: the base
    fold = tiny_hamburger("llama", lora_scope="after_fold")  # (its callers mark a fold's first slot as merged)
    assert torch.equal(fold.adapter_gate(merged.shape, "cpu", merged), after.adapter_gate(merged.shape, "cpu", merged))
    # One new slot per row on a cache: the rows whose cache holds a merged slot are adapted, merged input or not.
    merged_now, merged_before = torch.tensor([[False], [True], [False]]), torch.tensor([True, False, False])
    step = after.adapter_gate((3, 1), "cpu", merged_now, merged_before)
    assert step.int().tolist() == [[1], [1], [0]]
    both = tiny_hamburger("llama", lora_scope="merged_and_after")
    gate = both.adapter_gate(merged.shape, "cpu", merged)
    assert gate.shape == (2, 7, 2)
    assert torch.equal(gate[..., 0], merged)  # set 0: the merged slots, as `merged`
    assert gate[..., 1].int().tolist() == [[0, 0, 0, 1, 1, 0, 1], [0] * 7]  # set 1: the other slots after a merge
    step = both.adapter_gate((3, 1), "cpu", merged_now, merged_before)
    assert step.int().tolist() == [[[0, 1]], [[1, 0]], [[0, 0]]]


@pytest.mark.parametrize("scope", SCOPED)
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_scoped_adapters_at_confidence_one_are_the_base(family, scope, char_tokenizer):
    """With scoped adapters, confidence 1.0 (nothing merges) decodes the unadapted base exactly."""
    scoped = adapted(tiny_hamburger(family, lora_scope=scope))
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


@pytest.mark.parametrize("scope", SCOPED)
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_scoped_engine_matches_training_forward(family, scope, char_tokenizer):
    """The engine adapts exactly the slots the training forward adapts: same logits token by token."""
    model = adapted(tiny_hamburger(family, seed=3, lora_scope=scope), std=0.2)
    assert_engine_matches_training_forward(model, char_tokenizer)
    # A batch in which one row merges and the other does not: the unmerged row is the base's own.
    prompts = [PROMPTS[0], PROMPTS[1]]
    plain = [hf_greedy(tiny_base(family, seed=3), p, 12) for p in prompts]
    out = Generation(model, char_tokenizer, prompts, [DecodingConfig(max_new_tokens=12, confidence=0.5),
                                                      DecodingConfig(max_new_tokens=12, confidence=1.0)]).run()
    assert out[1].token_ids == plain[1]


def test_after_merge_scope_adapts_the_slots_that_read_a_merge(char_tokenizer):
    """after_merge changes the predictions after a merged slot that merged-only adapters leave to the base, and
    none before the first merge."""
    outs = {}
    batch = TrainBatch([PROMPTS[0]], [list(range(30, 40))], [[1, 1, 2, 1, 1, 3, 1]])
    for scope in ("merged", "after_merge"):
        model = adapted(tiny_hamburger("llama", seed=3, lora_scope=scope), std=0.2)
        with torch.no_grad():
            outs[scope] = model.training_forward(batch).token_logits
    # token -> group: 0, 1, 2-3, 4, 5, 6-8, 9. Group 2's merged slot predicts token 4 (adapted by both scopes); the
    # single slot of group 3 predicts token 5, adapted by after_merge only.
    assert torch.equal(outs["merged"][:5], outs["after_merge"][:5])
    assert not torch.allclose(outs["merged"][5:], outs["after_merge"][5:], atol=1e-4)


@pytest.mark.parametrize("scope", ["after_merge", "merged_and_after"])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_after_merge_engine_remembers_the_rows_merges(family, scope, char_tokenizer):
    """One-token groups fed after a merged one are adapted in decoding as in training: the engine keeps each row's
    merge history (here: long groups first, then the knob raised to 1.0 mid-answer, in one row of a batch)."""
    model = adapted(tiny_hamburger(family, seed=3, lora_scope=scope), std=0.2)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)  # long groups
    prompts = [PROMPTS[0], PROMPTS[1]]
    run = Generation(model, char_tokenizer, prompts, DecodingConfig(max_new_tokens=16, confidence=0.5),
                     trace_logits=True)
    for event in run:
        if event.row == 0 and len(event.token_ids) > 1:  # row 0 merged: one token per forward from now on
            run.rows[0].threshold, run.rows[0].floor = knob_gates(1.0, model.config.gate)
    res = run.results
    assert res[0].groups[0] > 1 and res[0].groups[1:] == [1] * (len(res[0].groups) - 1)
    assert max(res[1].groups[1:-1]) > 1
    for row, (prompt, r) in enumerate(zip(prompts, res)):
        with torch.no_grad():
            out = model.training_forward(TrainBatch([prompt], [r.token_ids], [r.groups]))
        torch.testing.assert_close(out.token_logits, torch.stack(run.logits[row]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("scope", SCOPED)
def test_scoped_checkpoint_keeps_adapters_apart(tmp_path, scope, char_tokenizer):
    model = adapted(tiny_hamburger("llama", seed=3, lora_scope=scope))
    base_dir = tmp_path / "base"
    tiny_base("llama", seed=3).save_pretrained(base_dir)
    char_tokenizer.save_pretrained(base_dir)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(tiny_base("llama", seed=3)))
    ckpt = save_checkpoint(model, tmp_path / "ckpt", info)
    loaded, tokenizer, _ = load_checkpoint(ckpt, merge_adapters=True)  # what inference asks for
    assert loaded.config.lora_scope == scope and list(lora_modules(loaded.base))  # not folded in
    cfg = DecodingConfig(max_new_tokens=16, confidence=0.5)
    a, b = generate(model, char_tokenizer, PROMPTS[0], cfg), generate(loaded, tokenizer, PROMPTS[0], cfg)
    assert (a.token_ids, a.groups) == (b.token_ids, b.groups)


def test_merged_scope_needs_lora_training():
    with pytest.raises(HamburgerError, match="lora_scope"):
        TrainConfig(base_mode="frozen", lora_scope="merged").validate()
    with pytest.raises(HamburgerError, match="lora_scope"):
        TrainConfig(lora_scope="sometimes").validate()
    with pytest.raises(HamburgerError, match="after_merge"):
        TrainConfig(base_mode="full", lora_scope="after_merge").validate()
    TrainConfig(base_mode="lora", lora_scope="merged").validate()
    TrainConfig(base_mode="lora", lora_scope="after_merge").validate()
    TrainConfig(base_mode="frozen", lora_scope="merged", init="CKPT").validate()  # keeps the init's adapters frozen


def test_two_adapter_sets_gate_apart_and_a_new_set_changes_nothing():
    """Set 1 acts only where its gate channel is on; `add_adapter_sets` adds a set at zero: the same model."""
    model = adapted(tiny_hamburger("llama", seed=2, lora_scope="merged"))
    ids = torch.tensor([[1, 20, 30, 40, 50, 60]])
    gate = torch.tensor([[0, 0, 1, 0, 1, 1]], dtype=torch.bool)
    with adapters_gated(model.base, gate):
        one_set = model.base(ids).logits
    add_adapter_sets(model.base, 2)
    assert adapter_sets(model.base) == 2
    with adapters_gated(model.base, torch.stack([gate, ~gate], -1)):
        assert torch.equal(model.base(ids).logits, one_set)  # set 1 is zero
    with torch.no_grad():
        for _, module in lora_modules(model.base):
            module.lora_B_1.normal_(std=0.5)
    with adapters_gated(model.base, torch.stack([gate, torch.zeros_like(gate)], -1)):
        assert torch.equal(model.base(ids).logits, one_set)  # set 1 gated off everywhere
    with adapters_gated(model.base, torch.stack([gate, ~gate], -1)):
        both = model.base(ids).logits
    assert not torch.allclose(both, one_set, atol=1e-3)
    with pytest.raises(HamburgerError, match="cannot be folded"):
        next(iter(lora_modules(model.base)))[1].delta_weight()


def test_merged_model_continues_as_merged_and_after_exactly(tmp_path, char_tokenizer):
    """Training a `merged` checkpoint on as `merged_and_after` starts at the same model: the second set is zero."""
    from tests.helpers import write_dataset
    from hamburger.train.trainer import Trainer

    model = adapted(tiny_hamburger("llama", seed=3, lora_scope="merged"), std=0.2)
    base_dir = tmp_path / "base"
    tiny_base("llama", seed=3).save_pretrained(base_dir)
    char_tokenizer.save_pretrained(base_dir)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(tiny_base("llama", seed=3)))
    ckpt = save_checkpoint(model, tmp_path / "merged", info)
    data = write_dataset(tmp_path / "data.jsonl", char_tokenizer)
    trainer = Trainer(TrainConfig.from_dict(dict(
        init=str(ckpt), data=str(data), out=str(tmp_path / "run"), base_mode="lora", lora_scope="merged_and_after",
        batch_size=4, max_train_steps=1, threads=1, progress=False, save_every=0, lora_r=2, lora_alpha=4.0)))
    assert adapter_sets(trainer.model.base) == 2 and trainer.model.config.lora_scope == "merged_and_after"
    trainable = {n for n, p in trainer.model.base.named_parameters() if p.requires_grad}
    assert any(n.endswith("lora_A_1") for n in trainable) and any(n.endswith("lora_B") for n in trainable)
    batch = TrainBatch([PROMPTS[0]], [list(range(30, 40))], [[1, 1, 2, 1, 1, 3, 1]])
    with torch.no_grad():
        before = model.training_forward(batch).token_logits
        after = trainer.model.training_forward(batch).token_logits
    torch.testing.assert_close(after, before, rtol=0, atol=1e-6)
    trainer.train()
    trained = {n: p for n, p in trainer.model.base.named_parameters() if n.endswith("lora_B_1")}
    assert any(float(p.detach().abs().sum()) > 0 for p in trained.values())  # the second set learned
    loaded, _, _ = load_checkpoint(tmp_path / "run" / "last")
    assert adapter_sets(loaded.base) == 2
    with torch.no_grad():
        torch.testing.assert_close(loaded.training_forward(batch).token_logits,
                                   trainer.model.training_forward(batch).token_logits, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "gemma3", "phi3", "deepseek_v3"])
def test_without_adapters_is_the_base_on_the_same_weights(family):
    """`without_adapters`: a module tree that computes the base exactly, on the very weights of the adapted one (no
    copy), without its LoRA layers or its hooks; the adapted model is left as it was."""
    from hamburger.core.lora import has_lora, without_adapters

    model = adapted(tiny_hamburger(family, seed=3))
    pristine = tiny_base(family, seed=3)
    layers = model.base.model.layers

    def tap(module, inputs, output):
        raise AssertionError("the adapted model's hook ran")

    handle = layers[1].register_forward_hook(tap)
    plain = without_adapters(model.base)
    ids = torch.tensor([[1, 40, 41, 42, 43, 7]])
    with torch.no_grad():
        assert torch.equal(plain(ids).logits, pristine(ids).logits)
        handle.remove()
        adapted_logits = model.base(ids).logits
        assert not torch.allclose(adapted_logits, pristine(ids).logits)  # (the adapters still act on the original)
    assert has_lora(model.base) and not has_lora(plain)
    held = {id(t) for t in [*model.base.parameters(), *model.base.buffers()]}
    assert all(id(p) in held for p in [*plain.parameters(), *plain.buffers()])
    assert len(list(plain.parameters())) == len(list(pristine.parameters()))
