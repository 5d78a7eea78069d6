"""A single tail (`HamburgerConfig.single_tail`): each fed group's last tokens take their own slots, in the same forward."""

import pytest
import torch

from hamburger.core.packing import input_sizes
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, assert_engine_matches_training_forward, hf_greedy, tiny_hamburger


def tail_model(tail: int, family: str = "llama", **kw):
    model = tiny_hamburger(family, seed=3, single_tail=tail, **kw)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)  # long groups at confidence 0.5
    return model


@pytest.mark.parametrize("tail", [1, 2])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_engine_equals_the_training_forward_of_the_same_layout(tail, family, char_tokenizer):
    assert_engine_matches_training_forward(tiny_hamburger(family, seed=3, single_tail=tail), char_tokenizer)


def test_confidence_one_is_still_the_base(char_tokenizer):
    model = tail_model(1)
    res = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=1.0))
    assert res.token_ids == hf_greedy(model.base, PROMPTS[0], 20) and res.tau == 1.0


@pytest.mark.parametrize("tail", [1, 2])
def test_one_forward_per_group_and_kv_slots_per_input(tail, char_tokenizer):
    model = tail_model(tail)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.5))
        assert max(res.groups) > tail + 1, "the test needs merged heads"
        assert res.forwards == len(res.groups)
        fed = sum(len(input_sizes(n, tail)) for n in res.groups[:-1])
        assert res.kv_slots == len(prompt) + fed
        plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=1.0))
        assert res.kv_bytes == res.kv_slots * plain.kv_bytes // plain.kv_slots  # the cache's own count agrees


@pytest.mark.parametrize("static", [False, True])
def test_batch_with_holes_equals_single_runs(static, char_tokenizer):
    """Rows of one batch feed different numbers of inputs per step (holes before the shorter ones' inputs, squeezed
    out as they pile up): each row gives what it gives alone, on the dynamic and the static cache."""
    model = tail_model(1)
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=c) for n, c in ((24, 0.5), (11, 1.0), (17, 0.5))]
    batch = Generation(model, char_tokenizer, PROMPTS, cfgs, static_cache=static).run()
    for prompt, cfg, res in zip(PROMPTS, cfgs, batch):
        single = generate(model, char_tokenizer, prompt, cfg)
        assert (res.token_ids, res.groups, res.kv_slots) == (single.token_ids, single.groups, single.kv_slots)
    assert max(max(r.groups) for r in batch) > 2


def test_reread_reads_the_whole_group_again(char_tokenizer):
    """Re-reading a group fed as a merged head and a single tail makes both holes: every fed token ends in a slot
    of its own, and each group starts with the base's greedy token after the unmerged answer so far."""
    model = tail_model(1)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.5, reread=1.0))
        assert res.rereads == sum(n > 2 for n in res.groups[:-1]) > 0
        assert res.kv_slots == len(prompt) + res.tokens - res.groups[-1]
        greedy = model.base(torch.tensor([prompt + res.token_ids])).logits[0, len(prompt) - 1:].argmax(-1).tolist()
        start = 0
        for n in res.groups:
            assert res.token_ids[start] == greedy[start]
            start += n


def test_single_tail_is_checked():
    with pytest.raises(HamburgerError, match="single_tail"):
        tiny_hamburger("llama", single_tail=4)  # max_steps 4: a tail of 4 would leave no group to merge
