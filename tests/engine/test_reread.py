"""Re-read on doubt (`DecodingConfig.reread`): a doubted merged group is read again as single slots."""

import math

import pytest
import torch

from hamburger.core.lora import adapters_gated
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, adapted, tiny_hamburger


def long_group_model(scope: str | None = None):
    model = tiny_hamburger("llama", seed=3, **({"lora_scope": scope} if scope else {}))
    if scope:
        adapted(model, std=0.2)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)  # long groups at confidence 0.5
    return model


def group_firsts(groups: list[int]) -> list[int]:
    starts, at = [], 0
    for g in groups:
        starts.append(at)
        at += g
    return starts


@pytest.mark.parametrize("scope", [None, "merged", "merged_and_after"])
def test_reread_always_reads_every_group_start_from_unmerged_history(scope, char_tokenizer):
    """reread 1.0 re-reads every merged group: each group's first token is the unadapted base's greedy token after
    the whole answer so far, one slot per token, and the cache ends holding one slot per token."""
    model = long_group_model(scope)
    for prompt in PROMPTS:
        cfg = DecodingConfig(max_new_tokens=30, confidence=0.5, reread=1.0)
        res = generate(model, char_tokenizer, prompt, cfg)
        merged_fed = sum(g > 1 for g in res.groups[:-1])  # the last group is never fed
        assert merged_fed > 0 and res.rereads == merged_fed
        assert res.forwards == len(res.groups) + res.rereads
        assert res.kv_slots == len(prompt) + res.tokens - res.groups[-1]  # every fed token in a slot of its own
        plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=1.0))
        assert res.kv_bytes == res.kv_slots * plain.kv_bytes // plain.kv_slots  # the cache's own count
        ids = torch.tensor([prompt + res.token_ids])
        with torch.no_grad(), adapters_gated(model.base, model.adapter_gate(ids.shape, "cpu")):
            greedy = model.base(ids).logits[0, len(prompt) - 1:].argmax(-1).tolist()
        for start in group_firsts(res.groups):
            assert res.token_ids[start] == greedy[start]


def test_reread_off_changes_nothing_and_rows_of_a_batch_keep_their_own(char_tokenizer):
    """reread 0 decodes exactly as before; in one batch rows that re-read (leaving holes in the shared cache) and
    rows that do not give what each gives alone."""
    model = long_group_model()
    cfgs = [DecodingConfig(max_new_tokens=20, confidence=0.5, reread=r) for r in (1.0, 0.0, 1.0)]
    batch = Generation(model, char_tokenizer, PROMPTS, cfgs).run()
    for prompt, cfg, res in zip(PROMPTS, cfgs, batch):
        single = generate(model, char_tokenizer, prompt, cfg)
        assert (res.token_ids, res.groups, res.rereads, res.kv_slots, res.forwards) == \
            (single.token_ids, single.groups, single.rereads, single.kv_slots, single.forwards)
    off = generate(model, char_tokenizer, PROMPTS[1], DecodingConfig(max_new_tokens=20, confidence=0.5))
    assert (off.token_ids, off.groups, off.rereads) == (batch[1].token_ids, batch[1].groups, 0)
    assert batch[0].rereads > 0 and batch[0].token_ids != generate(
        model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=0.5)).token_ids


def test_reread_threshold_is_the_top_probability_after_a_merged_slot(char_tokenizer):
    """A group is re-read iff the model's top probability after its merged slot is below `reread`: at the least
    such probability of a decode nothing changes; just above it, that group (the first to change) is re-read."""
    model = long_group_model()
    prompt = PROMPTS[1]
    off = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=40, confidence=0.5))
    starts = group_firsts(off.groups)
    after_merge = [(off.token_probs[s], s) for s, g in zip(starts[1:], off.groups) if g > 1]
    least, at = min(after_merge)
    same = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=40, confidence=0.5, reread=least))
    assert (same.token_ids, same.groups, same.rereads, same.forwards) == (off.token_ids, off.groups, 0, off.forwards)
    above = math.nextafter(least, 1.0)
    res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=40, confidence=0.5, reread=above))
    assert res.rereads >= 1 and res.forwards == len(res.groups) + res.rereads
    assert res.token_ids[:at] == off.token_ids[:at] and res.groups[:starts.index(at)] == off.groups[:starts.index(at)]


def test_reread_is_checked(char_tokenizer):
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(HamburgerError, match="reread"):
            DecodingConfig(reread=bad).validate()
    with pytest.raises(HamburgerError, match="dynamic"):
        Generation(tiny_hamburger(), char_tokenizer, [PROMPTS[0]], DecodingConfig(reread=0.5), static_cache=True)


def test_summary_line_counts_the_rereads(char_tokenizer):
    from hamburger.cli.render import summary_line
    model = long_group_model()
    res = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=0.5, reread=1.0))
    plain = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=0.5))
    assert f"{res.forwards} base forwards ({res.rereads} re-reads)" in summary_line(res)
    assert "re-reads" not in summary_line(plain)
