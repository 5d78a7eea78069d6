"""Prompt lookup drafts (`engine/lookup.py`) and verify mode drafting by them where the text matches."""

import pytest
import torch

from hamburger.engine.lookup import PromptLookup
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, _Drafts
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy
from tests.verify_helpers import (FOLDINGS, drafting_model, fed_groups,
                                  fold_schedule, folded_reference_logits, folding_model)

REPEATING = [1, 40, 41, 42, 43, 44, 40, 41, 42, 50, 51, 40, 41]  # "40 41" twice before the end, then at the end


def test_latest_match_of_the_longest_ngram():
    lookup = PromptLookup(tokens=3, ngram=3, min_ngram=1)
    # the 2-gram [40, 41] ends the text; its latest earlier occurrence (index 6) is followed by 42, 50, 51
    assert lookup.propose(REPEATING, 10) == [42, 50, 51]
    # a longer match wins over a later shorter one: [7, 8, 9] at 0 beats [8, 9] at 5
    assert lookup.propose([7, 8, 9, 1, 2, 8, 9, 3, 7, 8, 9], 10) == [1, 2, 8]
    assert lookup.propose([5, 6, 5], 10) == [6, 5]  # a 1-gram, followed up to the text's end


def test_limits_and_misses():
    lookup = PromptLookup(tokens=2, ngram=3, min_ngram=2)
    assert lookup.propose(REPEATING, 10) == [42, 50]  # at most `tokens`
    assert lookup.propose(REPEATING, 1) == [42]  # at most the room left
    assert lookup.propose(REPEATING, 0) == []
    assert lookup.propose([5, 6, 5], 10) == []  # only a 1-gram matches, below min_ngram
    assert lookup.propose([1, 2, 3, 4], 10) == []
    assert lookup.propose([4, 4], 10) == []  # a 1-gram: below min_ngram 2
    assert PromptLookup(min_ngram=1).propose([4, 4], 10) == [4]
    assert lookup.propose([], 10) == [] and lookup.propose([4], 10) == []
    # the text's own tail is no match: [9, 9, 9] matches [9, 9] at index 0, followed by 9
    assert lookup.propose([9, 9, 9], 10) == [9]


@pytest.mark.parametrize("bad", [dict(tokens=0), dict(ngram=2, min_ngram=3), dict(min_ngram=0)])
def test_bad_lookup_is_refused(bad, char_tokenizer):
    with pytest.raises(HamburgerError):
        VerifyGeneration(drafting_model("llama"), char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=5),
                         lookup=PromptLookup(**bad))


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("draft", [None, 0, 2])
def test_greedy_verify_with_lookup_equals_base_greedy(family, draft, char_tokenizer):
    """Lookup drafts where the text repeats (beyond max_draft), the MSD elsewhere: the output is the base's greedy."""
    model = drafting_model(family)
    lookup = PromptLookup(tokens=6, ngram=2, min_ngram=1)
    looked = 0
    for prompt in PROMPTS + [REPEATING]:
        res = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=40, confidence=0.2),
                               draft=draft, lookup=lookup).run()[0]
        assert res.token_ids == hf_greedy(model.base, prompt, 40)
        assert len(res.looked_up) == len(res.drafts) == len(res.accepted) == res.forwards - 1
        assert res.groups[1:] == [a + 1 for a in res.accepted][:len(res.groups) - 1]
        assert all(d <= 6 for d in res.drafts)
        assert res.kv_slots == len(prompt) + res.tokens - 1
        looked += sum(res.looked_up)
        if draft == 0:  # no MSD drafts: every draft came from the lookup
            assert all(up for up, d in zip(res.looked_up, res.drafts) if d)
    assert looked > 3, "the test needs lookup drafts"


def test_no_draft_goes_past_a_token_that_would_end_the_row(char_tokenizer):
    """A row stops at an EOS id: prompt lookup's draft is cut after one (unless the row ignores EOS; the chat
    template's turn end would otherwise bring the next turn's header along) and the MSD drafts nothing after one."""
    model, eos = drafting_model("llama"), 2  # (the tiny models end at 2 and 3)
    prompt = [1, 40, 41, eos, 44, 45, 46, 40, 41]  # "40 41" ends the text and was followed by EOS
    for ignore, want in ((False, [eos]), (True, [eos, 44, 45, 46, 40])):
        run = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=8, ignore_eos=ignore,
                                                                               confidence=1e-6),
                               lookup=PromptLookup(tokens=5, ngram=2, min_ngram=2))
        drafts = _Drafts()
        assert run._look_up(run.rows[0], drafts, 1) and drafts.tokens == want
        hidden = torch.zeros(1, model.base.config.hidden_size)
        going_on = run._still_drafting(hidden, hidden, run.rows, [_Drafts(tokens=[44, eos])], [5], [0])
        assert going_on == ([0] if ignore else [])
        assert run._still_drafting(hidden, hidden, run.rows, [_Drafts(tokens=[44])], [5], [0]) == [0]
        if not ignore:
            assert run.run()[0].token_ids == hf_greedy(model.base, prompt, 8)


def test_lookup_drafts_in_a_ragged_batch(char_tokenizer):
    model = drafting_model("qwen2")
    lookup = PromptLookup(tokens=5, ngram=2, min_ngram=1)
    prompts = PROMPTS + [REPEATING]
    batch = VerifyGeneration(model, char_tokenizer, prompts, DecodingConfig(max_new_tokens=30, confidence=0.2),
                             lookup=lookup).run()
    for prompt, res in zip(prompts, batch):
        assert res.token_ids == hf_greedy(model.base, prompt, 30)
    assert any(any(r.looked_up) for r in batch) and not all(all(r.looked_up) for r in batch)


def test_max_new_tokens_exact_with_long_lookups(char_tokenizer):
    model = drafting_model("llama")
    for n in (1, 2, 5, 9):
        res = VerifyGeneration(model, char_tokenizer, [REPEATING], DecodingConfig(max_new_tokens=n, ignore_eos=True),
                               draft=0, lookup=PromptLookup(tokens=10, min_ngram=1)).run()[0]
        assert res.tokens == n == len(res.token_ids)


def test_folded_logits_with_lookup_drafts(char_tokenizer):
    """Lookup drafts change which tokens each forward keeps, never what a slot reads: the engine's logits are still
    those of one uncached forward over the folded layout it fed."""
    model, folding = folding_model(), FOLDINGS["segments 6"]
    looked = 0
    for prompt in PROMPTS + [REPEATING]:
        run = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=40, ignore_eos=True),
                               fold=folding, trace_logits=True, lookup=PromptLookup(tokens=6, min_ngram=1))
        res = run.run()[0]
        fed, traced = fed_groups(res), torch.stack(run.logits[0])
        schedule = fold_schedule(folding, model.base.config.vocab_size, traced, fed)
        want = folded_reference_logits(model, prompt, res.token_ids, fed, schedule)
        torch.testing.assert_close(traced, want, rtol=1e-4, atol=1e-4)
        assert res.token_ids == want.argmax(-1).tolist()
        looked += sum(res.looked_up)
    assert looked > 3, "the test needs lookup drafts"


def test_cli_lookup_keeps_verify_lossless(tmp_path, char_tokenizer, capsys):
    """`hamburger generate --mode verify --lookup N` drafts by lookup (by default 10 tokens; 0: never) and prints the
    same tokens as verify mode without it (both the unchanged base's greedy answer); --lookup needs verify mode."""
    import json

    from hamburger.cli.main import main
    from tests.helpers import save_tiny_lora

    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    outs = []
    for extra in (["--lookup", "0"], ["--lookup", "4"], []):
        assert main(["generate", "--model", str(ckpt), "--mode", "verify", "--json", "--raw", "--max-new-tokens", "24",
                     *extra, "abcabcabc abcabc"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["token_ids"] == outs[1]["token_ids"] == outs[2]["token_ids"]
    assert not any(outs[0]["looked_up"]) and any(outs[1]["looked_up"]) and any(outs[2]["looked_up"])
    assert main(["generate", "--model", str(ckpt), "--mode", "hamburger", "--lookup", "4", "--raw", "abc"]) == 1
