"""Plausibility under the base (against a direct computation) and the paired bootstrap (known answers)."""

import math
import random

import pytest
import torch

from hamburger.eval.paired import Band, compare, paired_bootstrap, parse_bands, per_type, verdict
from hamburger.eval.plausibility import plausibility, repeated_ngram_mask, repeated_ngram_rate, token_nll
from tests.helpers import tiny_base


def test_nll_equals_direct_computation():
    lm = tiny_base("llama", seed=3)
    prompt, answer = [1, 40, 41, 42], [50, 51, 52, 2]
    got = token_nll(lm, prompt, answer)
    ids = prompt + answer
    with torch.no_grad():
        logits = lm(torch.tensor([ids])).logits[0]
    direct = []
    for k, tok in enumerate(answer):  # token at position len(prompt)+k is predicted from the logits before it
        logp = torch.log_softmax(logits[len(prompt) + k - 1].double(), -1)
        direct.append(-logp[tok].item())
    assert got == pytest.approx(direct, abs=1e-5)
    p = plausibility(lm, prompt, answer, eos={2})
    assert p["nll_per_token"] == pytest.approx(sum(direct) / 4, abs=1e-5)
    assert p["worst_token_nll"] == pytest.approx(max(direct), abs=1e-5) and p["rep4"] == 0.0
    assert token_nll(lm, prompt, []) == []


def test_repeated_ngram_rate():
    assert repeated_ngram_rate([1, 2, 3, 4, 1, 2, 3, 4]) == pytest.approx(1 - 4 / 5)  # 5 grams, 4 distinct
    assert repeated_ngram_rate([1, 2, 3]) == 0.0 and repeated_ngram_rate([7] * 10) == pytest.approx(6 / 7)


def test_repeated_ngram_mask_marks_the_repeats_the_rate_counts():
    assert repeated_ngram_mask([1, 2, 3, 4, 1, 2, 3, 4, 5]) == [False] * 7 + [True, False]
    assert repeated_ngram_mask([7] * 6) == [False] * 4 + [True, True] and repeated_ngram_mask([1, 2]) == [False] * 2
    rng = random.Random(0)
    for _ in range(50):
        ids = [rng.randrange(3) for _ in range(rng.randrange(1, 30))]
        grams = [tuple(ids[i:i + 4]) for i in range(len(ids) - 3)]
        assert sum(repeated_ngram_mask(ids)) == len(grams) - len(set(grams))
        assert repeated_ngram_rate(ids) == pytest.approx(sum(repeated_ngram_mask(ids)) / max(1, len(grams)))


def test_bootstrap_known_answers():
    # a constant difference has a zero-width interval
    assert paired_bootstrap([3.0, 4.0, 5.0], [1.0, 2.0, 3.0]) == (2.0, 2.0, 2.0)
    # differences 1 and 0 in equal shares, n = 400: mean 0.5, standard error 0.5 / 20 = 0.025
    a, b = [1.0, 0.0] * 200, [0.0] * 400
    diff, lo, hi = paired_bootstrap(a, b, n_boot=4000, seed=1)
    assert diff == 0.5 and lo == pytest.approx(0.5 - 1.96 * 0.025, abs=0.008) and hi == pytest.approx(0.549, abs=0.008)
    # pairing matters: a shared per-prompt offset cancels out
    base = [float(i * 10) for i in range(50)]
    assert paired_bootstrap([x + 1 for x in base], base)[1:] == (1.0, 1.0)
    # weights make it a micro average: (1*3 + 0*1) / 4
    assert paired_bootstrap([1.0, 0.0], [0.0, 0.0], weights=[3, 1])[0] == 0.75


def test_bands_and_verdicts():
    acc = Band("inst_strict", "base", True, 0.01)
    assert verdict(acc, -0.005, 0.02) == "inside" and verdict(acc, -0.05, 0.0) == "undecided"
    assert verdict(acc, -0.05, -0.02) == "outside"
    nll = Band("nll_per_token", "base-sampled", False, 0.0)
    assert nll.contains(-0.1) and not nll.contains(0.01)
    assert parse_bands("rep4:base:lower:0.02,inst_strict:base:higher:0.01:instructions") == (
        Band("rep4", "base", False, 0.02), Band("inst_strict", "base", True, 0.01, "instructions"))


def _rec(method, i, **values):
    return {"task": "chat", "method": method, "id": f"p{i}", "confidence": 0.5, **values}


def test_compare_pairs_by_prompt():
    records = [_rec("base", i, rep4=0.1, nll_per_token=0.5) for i in range(20)]
    records += [_rec("base-sampled", i, rep4=0.0, nll_per_token=1.0) for i in range(20)]
    records += [_rec("hamburger@0.5", i, rep4=0.1, nll_per_token=0.8) for i in range(20)]
    bands = (Band("rep4", "base", False, 0.0), Band("nll_per_token", "base-sampled", False, 0.0))
    out = {c["band"]["metric"]: c for c in compare(records, bands)}
    assert out["rep4"]["diff"] == 0 and out["rep4"]["verdict"] == "inside"
    assert out["nll_per_token"]["diff"] == pytest.approx(-0.2) and out["nll_per_token"]["verdict"] == "inside"
    assert {c["method"] for c in compare(records, bands)} == {"hamburger@0.5"}


def test_a_sampled_method_is_held_to_the_base_sampled_answers():
    rep4 = Band("rep4", "base", False, 0.0)
    assert rep4.held_to("verify-fold-sampled").reference == "base-sampled"
    assert rep4.held_to("verify-fold") is rep4 and rep4.held_to("base-sampled").reference == "base-sampled"
    records = [_rec("base", i, rep4=0.3) for i in range(10)] + [_rec("base-sampled", i, rep4=0.1) for i in range(10)]
    records += [_rec(m, i, rep4=0.2) for m in ("verify", "verify-sampled") for i in range(10)]
    out = {c["method"]: c for c in compare(records, (rep4,))}
    assert out["verify"]["diff"] == pytest.approx(-0.1) and out["verify"]["point_inside"]
    assert out["verify-sampled"]["diff"] == pytest.approx(0.1) and not out["verify-sampled"]["point_inside"]
    assert out["verify-sampled"]["band_text"] == "rep4 - base-sampled <= +0"


def test_compare_pairs_per_prompt_means_over_draws():
    """A prompt answered in several draws counts once, as the mean over its draws: the interval is over prompts."""
    nll = Band("worst_token_nll", "base-sampled", False, 0.0)
    records = [_rec("base", i, worst_token_nll=1.0) for i in range(10)]
    records += [dict(_rec("base-sampled", i, worst_token_nll=2.0 + draw * (i % 2)), draw=draw)
                for i in range(10) for draw in range(3)]  # odd prompts: 2, 3, 4 (mean 3); even: 2
    records += [dict(_rec("verify-sampled", i, worst_token_nll=2.5 + i % 2 + draw), draw=draw)
                for i in range(10) for draw in range(2)]  # odd prompts: 3.5, 4.5 (mean 4); even: 2.5, 3.5 (mean 3)
    (out,) = compare(records, (nll,))
    # every prompt's mean is 1 above base-sampled's: the interval collapses onto it (draws are not units)
    assert out["examples"] == 10 and out["diff"] == out["lo"] == out["hi"] == pytest.approx(1.0)


def test_per_type():
    def rec(method, i, strict):
        return {"task": "ifeval", "method": method, "id": i, "followed": [{"id": "a", "strict": strict}]}

    records = [rec("base", i, i % 2 == 0) for i in range(10)] + [rec("h", i, True) for i in range(10)]
    (row,) = per_type(records)
    assert (row["type"], row["acc"], row["ref_acc"], row["instructions"]) == ("a", 1.0, 0.5, 10)
    assert math.isclose(row["diff"], 0.5) and row["reference"] == "base"
    # a sampled method is paired with the base's sampled answers; base-sampled itself with base greedy
    records += [rec("base-sampled", i, i < 2) for i in range(10)] + [rec("h-sampled", i, i < 4) for i in range(10)]
    rows = {r["method"]: r for r in per_type(records)}
    assert rows["h-sampled"]["reference"] == "base-sampled" and math.isclose(rows["h-sampled"]["diff"], 0.2)
    assert rows["base-sampled"]["reference"] == "base" and math.isclose(rows["base-sampled"]["diff"], -0.3)
    # draws: a prompt's accuracy is the mean over its draws, its weight its instructions of the type (not x draws)
    records += [dict(rec("h-sampled", i, i < 6), draw=1) for i in range(10)]
    rows = {r["method"]: r for r in per_type(records)}
    assert rows["h-sampled"]["instructions"] == 10 and math.isclose(rows["h-sampled"]["acc"], 0.5)
    assert math.isclose(rows["h-sampled"]["diff"], 0.3)


def test_micro_agreement_counts_tokens_2_to_k_of_each_group():
    from hamburger.eval.plausibility import micro_agreement

    answer = [5, 6, 7, 8, 9, 10]
    greedy = [5, 6, 0, 8, 0, 10]  # the base disagrees at positions 2 and 4
    assert micro_agreement(answer, [1, 3, 2], greedy) == (3, 2)  # micro tokens at 2, 3 and 5
    assert micro_agreement(answer, [1] * 6, greedy) == (0, 0)
    assert micro_agreement(answer[:4], [4, 2], greedy) == (3, 2)  # an answer cut inside its last group


def test_after_merge_agreement_counts_the_first_token_after_each_merged_group():
    from hamburger.eval.plausibility import after_merge_agreement

    answer = [10, 11, 12, 13, 14, 15, 16]
    greedy = [10, 11, 12, 99, 14, 99, 99]  # the base disagrees at positions 3, 5 and 6
    assert after_merge_agreement(answer, [1, 3, 1, 1, 1], greedy) == (1, 1)  # position 4 only (after the 3-group)
    assert after_merge_agreement(answer, [2, 1, 2, 2], greedy) == (2, 1)  # positions 2 and 5
    assert after_merge_agreement(answer, [1] * 7, greedy) == (0, 0)
    assert after_merge_agreement(answer[:2], [2, 2], greedy) == (0, 0)  # the answer ended inside the merged group


def test_after_merge_by_size_splits_the_skip_path_by_the_merged_slot_it_reads():
    from hamburger.eval.plausibility import after_merge_by_size

    answer = [10, 11, 12, 13, 14, 15, 16, 17]
    greedy = [10, 11, 12, 99, 14, 99, 16, 99]  # the base disagrees at positions 3, 5 and 7
    nll = [0.0, 0.0, 0.0, 6.0, 0.5, 2.0, 1.0, 8.0]
    # groups [1][3][1][2][1]: position 4 reads a 3-token slot, position 7 a 2-token slot
    got = after_merge_by_size(answer, [1, 3, 1, 2, 1], greedy, nll)
    assert got == {"3": {"tokens": 1, "ok": 1, "nll": 0.5, "spikes": 0},
                   "2": {"tokens": 1, "ok": 0, "nll": 8.0, "spikes": 1}}
    # two 2-token slots read: positions 2 and 4 (3 was a micro token)
    assert after_merge_by_size(answer[:5], [2, 2, 1], greedy, nll) == {
        "2": {"tokens": 2, "ok": 2, "nll": 0.5, "spikes": 0}}
    assert after_merge_by_size(answer[:2], [2, 2], greedy, nll) == {}  # the answer ended inside the merged group
    assert after_merge_by_size(answer, [1] * 8, greedy, nll) == {}


def test_token_kinds_and_the_nll_by_kind():
    from hamburger.eval.plausibility import nll_by_kind, token_kinds
    assert token_kinds([1, 3, 1, 2, 1], 8) == ["single", "single", "micro", "micro", "after_merge", "single", "micro",
                                                 "after_merge"]
    assert token_kinds([2, 2], 3) == ["single", "micro", "after_merge"]  # cut inside the last group
    nll = [0.5, 6.0, 1.0, 0.0, 7.0, 2.0, 0.25, 9.0]
    got = nll_by_kind(nll, [1, 3, 1, 2, 1])
    assert got["by_kind"] == {"single": {"tokens": 3, "nll": 8.5, "spikes": 1},
                              "after_merge": {"tokens": 2, "nll": 16.0, "spikes": 2},
                              "micro": {"tokens": 3, "nll": 1.25, "spikes": 0}}
    assert got["worst_kind"] == "after_merge"
    assert nll_by_kind([], [])["worst_kind"] is None
