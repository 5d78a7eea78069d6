"""A folding single tail (`HamburgerConfig.fold_tail` d): a group fed as a merged head and a tail comes back as one
merged slot d steps later, so the history is the paper's layout and only the latest d groups are split."""

import pytest
import torch

from hamburger.core.masks import FOREVER, slot_mask
from hamburger.core.packing import TrainBatch, input_sizes, layout_slots, pack
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, assert_engine_matches_training_forward, hf_greedy, tiny_hamburger


def fold_model(tail: int = 1, family: str = "llama", fold: int = 1, **kw):
    model = tiny_hamburger(family, seed=3, single_tail=tail, fold_tail=fold, **kw)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)  # long groups at confidence 0.5
    return model


def paper_layout_logits(model, prompt: list[int], tokens: list[int], groups: list[int]) -> torch.Tensor:
    """Token logits of the training forward in the paper's layout (one slot per group), on the same weights."""
    tail, fold = model.config.single_tail, model.config.fold_tail
    model.config.single_tail, model.config.fold_tail = 0, 0
    try:
        with torch.no_grad():
            return model.training_forward(TrainBatch([prompt], [tokens], [groups])).token_logits
    finally:
        model.config.single_tail, model.config.fold_tail = tail, fold


@pytest.mark.parametrize("tail", [1, 2])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_each_group_reads_folded_history_and_a_split_last_group(tail, family, char_tokenizer):
    """Folding at the next step (d = 1): the logits of group j's tokens are those of the paper's layout where groups
    0..j-2 take one slot each and group j-1 is cut as `input_sizes` cuts it (its head and tail tokens as groups)."""
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


@pytest.mark.parametrize("fold", [1, 2, 3])
def test_kv_holds_one_slot_per_group_but_the_last_d_fed(fold, char_tokenizer):
    model = fold_model(1, fold=fold)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.5))
        assert max(res.groups[:-1]) > 2, "the test needs merged heads"
        assert res.forwards == len(res.groups)
        split = sum(len(input_sizes(n, 1)) - 1 for n in res.groups[-1 - fold:-1])
        assert res.kv_slots == len(prompt) + len(res.groups) - 1 + split
        plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=1.0))
        assert res.kv_bytes == res.kv_slots * plain.kv_bytes // plain.kv_slots  # the cache's own count agrees


def test_confidence_one_is_still_the_base(char_tokenizer):
    model = fold_model(1)
    res = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=1.0))
    assert res.token_ids == hf_greedy(model.base, PROMPTS[0], 20) and res.tau == 1.0


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("fold", [1, 2])
def test_batch_with_holes_equals_single_runs(static, fold, char_tokenizer):
    """Rows fold on different steps and feed different numbers of inputs: each gives what it gives alone."""
    model = fold_model(1, fold=fold)
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=c) for n, c in ((24, 0.5), (11, 1.0), (17, 0.5))]
    batch = Generation(model, char_tokenizer, PROMPTS, cfgs, static_cache=static).run()
    for prompt, cfg, res in zip(PROMPTS, cfgs, batch):
        single = generate(model, char_tokenizer, prompt, cfg)
        assert (res.token_ids, res.groups, res.kv_slots) == (single.token_ids, single.groups, single.kv_slots)
        torch.testing.assert_close(res.token_probs, single.token_probs, rtol=1e-4, atol=1e-5)
    assert max(max(r.groups) for r in batch) > 2


@pytest.mark.parametrize("fold", [1, 2])
def test_reread_group_is_folded_like_any_other(fold, char_tokenizer):
    """A re-read group holds one slot per token until it is folded like any other."""
    model = fold_model(1, fold=fold)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.5, reread=1.0))
        assert res.rereads == sum(n > 2 for n in res.groups[:-1]) > 0
        held = sum((n if n > 2 else len(input_sizes(n, 1))) - 1 for n in res.groups[-1 - fold:-1])  # re-read: per token
        assert res.kv_slots == len(prompt) + len(res.groups) - 1 + held
        plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=1.0))
        assert res.kv_bytes == res.kv_slots * plain.kv_bytes // plain.kv_slots


def test_fold_tail_is_checked():
    with pytest.raises(HamburgerError, match="fold_tail"):
        tiny_hamburger("llama", fold_tail=1)  # nothing to fold without a single tail
    with pytest.raises(HamburgerError, match="fold_tail"):
        tiny_hamburger("llama", single_tail=1, fold_tail=1, msd_context=2)
    with pytest.raises(HamburgerError, match="fold_tail"):
        tiny_hamburger("llama", single_tail=1, fold_tail=-1)


@pytest.mark.parametrize("tail,fold", [(1, 1), (2, 1), (1, 2), (2, 2), (1, 3)])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_engine_equals_the_training_forward_of_the_folded_layout(tail, fold, family, char_tokenizer):
    """`pack(fold=d)` is the layout the engine decodes: the same logits for every token of a folding decode."""
    assert_engine_matches_training_forward(tiny_hamburger(family, seed=3, single_tail=tail, fold_tail=fold),
                                           char_tokenizer)


def test_folded_layout_slots_and_masks():
    """A split group's inputs are seen by each other only; its folded input and the prompt by every later slot."""
    batch = TrainBatch([[5, 6]], [[10, 11, 12, 13, 14, 15, 16]], [[3, 1, 2, 1]])
    p = pack(batch, 4, single_tail=1, fold=1)
    # prompt, [10 11][12], folded [10 11 12] + [13], [14][15] (the last fed group: not folded), group [16] predicted
    assert p.positions[0].tolist() == [0, 1, 3, 4, 4, 5, 6, 7]
    assert p.input_sizes.tolist() == [2, 1, 3, 1, 1, 1]
    assert p.lifetime[0].tolist() == [FOREVER] * 2 + [2, 1] + [FOREVER] * 4  # [10 11][12] until the fold's slot
    assert p.before_group[1].tolist() == [1, 3, 5, 7]  # each group is read off its last split input
    assert layout_slots(2, [3, 1, 2, 1], 1, fold=1) == p.valid.shape[1] == 8
    mask = slot_mask(p.valid, lifetime=p.lifetime)[0, 0]
    assert mask[5].tolist() == [True, True, False, False, True, True, False, False]  # [13] sees the fold, not [10 11]
    assert mask[3].tolist() == [True, True, True, True, False, False, False, False]  # the tail sees its head
    assert mask[4].tolist() == [True, True, False, False, True, False, False, False]  # the fold sees neither


def test_layout_folding_two_groups_later():
    """d = 2: a split group is seen by the next group's inputs and comes back before the inputs of the one after."""
    batch = TrainBatch([[5, 6]], [[10, 11, 12, 13, 14, 15, 16, 17]], [[3, 1, 2, 1, 1]])
    p = pack(batch, 4, single_tail=1, fold=2)
    # prompt, [10 11][12], [13], folded [10 11 12] + [14][15], [16] ([14][15] would fold at a 5th step), [17] predicted
    assert p.positions[0].tolist() == [0, 1, 3, 4, 5, 4, 6, 7, 8]
    assert p.lifetime[0].tolist() == [FOREVER] * 2 + [3, 2] + [FOREVER] * 5
    assert layout_slots(2, [3, 1, 2, 1, 1], 1, fold=2) == p.valid.shape[1] == 9
    mask = slot_mask(p.valid, lifetime=p.lifetime)[0, 0]
    assert mask[4].tolist() == [True] * 5 + [False] * 4  # [13] reads [10 11][12]
    assert mask[5].tolist() == [True, True, False, False, True, True, False, False, False]  # the fold: not itself split
    assert mask[6].tolist() == [True, True, False, False, True, True, True, False, False]  # [14] reads the fold


def test_training_forward_with_given_prompt_states_is_the_same(char_tokenizer):
    model = tiny_hamburger("llama", seed=3, single_tail=1, fold_tail=2)
    batch = TrainBatch([[1, 40, 41], [1, 50]], [[10, 11, 12, 13, 14, 15, 16], [20, 21, 22, 23, 24]],
                       [[3, 1, 2, 1], [2, 2, 1]])
    with torch.no_grad():
        whole = model.training_forward(batch)
        reused = model.training_forward(batch, prompt=model.prompt_states(batch))
    torch.testing.assert_close(reused.token_logits, whole.token_logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(reused.stop_logits, whole.stop_logits, rtol=1e-4, atol=1e-5)
