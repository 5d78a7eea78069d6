"""A folding single tail (`HamburgerConfig.fold_tail`): the group fed as a merged head and a tail comes back as one
merged slot at the next step, so the history is the paper's layout and only the latest group is split."""

import pytest
import torch

from hamburger.core.masks import slot_mask
from hamburger.core.packing import TrainBatch, input_sizes, layout_slots, pack
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, assert_engine_matches_training_forward, hf_greedy, tiny_hamburger


def fold_model(tail: int = 1, family: str = "llama", **kw):
    model = tiny_hamburger(family, seed=3, single_tail=tail, fold_tail=True, **kw)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)  # long groups at confidence 0.5
    return model


def paper_layout_logits(model, prompt: list[int], tokens: list[int], groups: list[int]) -> torch.Tensor:
    """Token logits of the training forward in the paper's layout (one slot per group), on the same weights."""
    tail, fold = model.config.single_tail, model.config.fold_tail
    model.config.single_tail, model.config.fold_tail = 0, False
    try:
        with torch.no_grad():
            return model.training_forward(TrainBatch([prompt], [tokens], [groups])).token_logits
    finally:
        model.config.single_tail, model.config.fold_tail = tail, fold


@pytest.mark.parametrize("tail", [1, 2])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_each_group_reads_folded_history_and_a_split_last_group(tail, family, char_tokenizer):
    """The logits of group j's tokens are those of the paper's layout where groups 0..j-2 take one slot each and
    group j-1 is cut as `input_sizes` cuts it (its head and each tail token as groups of their own)."""
    model = fold_model(tail, family)
    checked = 0
    for prompt in PROMPTS:
        run = Generation(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=24, confidence=0.5),
                         trace_logits=True)
        res = run.run()[0]
        logits = torch.stack(run.logits[0])
        starts = [sum(res.groups[:j]) for j in range(len(res.groups))]
        for j in range(1, len(res.groups)):
            groups = res.groups[:j - 1] + input_sizes(res.groups[j - 1], tail) + [res.groups[j]]
            end = starts[j] + res.groups[j]
            want = paper_layout_logits(model, prompt, res.token_ids[:end], groups)[starts[j]:end]
            torch.testing.assert_close(logits[starts[j]:end], want, rtol=1e-4, atol=1e-4)
            checked += res.groups[j - 1] > 1 and j >= 2 and res.groups[j - 2] > 1  # a fold that mattered
    assert checked > 0, "the test needs folded groups"


def test_kv_holds_one_slot_per_group_but_the_last_fed(char_tokenizer):
    model = fold_model(1)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.5))
        assert max(res.groups[:-1]) > 2, "the test needs merged heads"
        assert res.forwards == len(res.groups)
        assert res.kv_slots == len(prompt) + len(res.groups) - 2 + len(input_sizes(res.groups[-2], 1))
        plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=1.0))
        assert res.kv_bytes == res.kv_slots * plain.kv_bytes // plain.kv_slots  # the cache's own count agrees


def test_confidence_one_is_still_the_base(char_tokenizer):
    model = fold_model(1)
    res = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=1.0))
    assert res.token_ids == hf_greedy(model.base, PROMPTS[0], 20) and res.tau == 1.0


@pytest.mark.parametrize("static", [False, True])
def test_batch_with_holes_equals_single_runs(static, char_tokenizer):
    """Rows fold on different steps and feed different numbers of inputs: each gives what it gives alone."""
    model = fold_model(1)
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=c) for n, c in ((24, 0.5), (11, 1.0), (17, 0.5))]
    batch = Generation(model, char_tokenizer, PROMPTS, cfgs, static_cache=static).run()
    for prompt, cfg, res in zip(PROMPTS, cfgs, batch):
        single = generate(model, char_tokenizer, prompt, cfg)
        assert (res.token_ids, res.groups, res.kv_slots) == (single.token_ids, single.groups, single.kv_slots)
        torch.testing.assert_close(res.token_probs, single.token_probs, rtol=1e-4, atol=1e-5)
    assert max(max(r.groups) for r in batch) > 2


def test_reread_group_is_folded_at_the_next_step(char_tokenizer):
    """A re-read group holds one slot per token until the next step folds it like any other."""
    model = fold_model(1)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.5, reread=1.0))
        assert res.rereads == sum(n > 2 for n in res.groups[:-1]) > 0
        last = res.groups[-2]
        held = last if last > 2 else len(input_sizes(last, 1))  # re-read: a slot per token
        assert res.kv_slots == len(prompt) + len(res.groups) - 2 + held
        plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=1.0))
        assert res.kv_bytes == res.kv_slots * plain.kv_bytes // plain.kv_slots


def test_fold_tail_is_checked():
    with pytest.raises(HamburgerError, match="fold_tail"):
        tiny_hamburger("llama", fold_tail=True)  # nothing to fold without a single tail
    with pytest.raises(HamburgerError, match="fold_tail"):
        tiny_hamburger("llama", single_tail=1, fold_tail=True, msd_context=2)


@pytest.mark.parametrize("tail", [1, 2])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_engine_equals_the_training_forward_of_the_folded_layout(tail, family, char_tokenizer):
    """`pack(fold=True)` is the layout the engine decodes: the same logits for every token of a folding decode."""
    assert_engine_matches_training_forward(tiny_hamburger(family, seed=3, single_tail=tail, fold_tail=True),
                                           char_tokenizer)


def test_folded_layout_slots_and_masks():
    """A split group's inputs are seen by each other only; its folded input and the prompt by every later slot."""
    batch = TrainBatch([[5, 6]], [[10, 11, 12, 13, 14, 15, 16]], [[3, 1, 2, 1]])
    p = pack(batch, 4, single_tail=1, fold=True)
    # prompt, [10 11][12] + folded [10 11 12], [13], [14][15] (the last fed group: not folded), group [16] predicted
    assert p.positions[0].tolist() == [0, 1, 3, 4, 4, 5, 6, 7]
    assert p.input_sizes.tolist() == [2, 1, 3, 1, 1, 1]
    assert p.split[0].tolist() == [0, 0, 1, 1, 0, 0, 3, 3]
    assert p.before_group[1].tolist() == [1, 3, 5, 7]  # each group is read off its last split input
    assert layout_slots(2, [3, 1, 2, 1], 1, fold=True) == p.valid.shape[1] == 8
    mask = slot_mask(p.valid, split=p.split)[0, 0]
    assert mask[5].tolist() == [True, True, False, False, True, True, False, False]  # [13] sees the fold, not [10 11]
    assert mask[3].tolist() == [True, True, True, True, False, False, False, False]  # the tail sees its head
    assert mask[4].tolist() == [True, True, False, False, True, False, False, False]  # the fold sees neither


def test_training_forward_with_given_prompt_states_is_the_same(char_tokenizer):
    model = tiny_hamburger("llama", seed=3, single_tail=1, fold_tail=True)
    batch = TrainBatch([[1, 40, 41], [1, 50]], [[10, 11, 12, 13, 14, 15, 16], [20, 21, 22, 23, 24]],
                       [[3, 1, 2, 1], [2, 2, 1]])
    with torch.no_grad():
        whole = model.training_forward(batch)
        reused = model.training_forward(batch, prompt=model.prompt_states(batch))
    torch.testing.assert_close(reused.token_logits, whole.token_logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(reused.stop_logits, whole.stop_logits, rtol=1e-4, atol=1e-5)
