"""The decode curve's paired table: each decode minus the base's greedy and sampled answers and minus the first
model at the same gate and knob, paired by prompt (point estimate = mean of the per-prompt differences)."""

import pytest

from benchmarks.decode_fidelity import PAIRED_METRICS, paired


def run(model, gate, knob, nll, worst):
    rows = [{"id": f"p{i}", "nll_per_token": a, "worst_token_nll": b} for i, (a, b) in enumerate(zip(nll, worst))]
    return {"model": model, "gate": gate, "confidence": knob, "rows": rows[::-1]}  # order must not matter


def test_paired_differences_against_base_references_and_the_first_model():
    result = {"runs": [run("base greedy", "stop_head", 1.0, [0.4, 0.5, 0.6], [2.0, 2.0, 2.0]),
                       run("base sampled", "stop_head", 1.0, [0.7, 0.8, 0.9], [3.0, 4.0, 5.0]),
                       run("A", "token_prob", 0.9, [0.5, 0.5, 0.5], [3.0, 3.0, 3.0]),
                       run("A", "token_prob", 0.7, [1.0, 1.0, 1.0], [6.0, 6.0, 6.0]),
                       run("B", "token_prob", 0.9, [0.6, 0.7, 0.8], [2.0, 2.0, 5.0])]}
    lines = paired(result)
    against = {(x["model"], x["confidence"], x["against"]): x for x in lines}
    assert set(against) == {("A", 0.9, "base greedy"), ("A", 0.9, "base sampled"), ("A", 0.7, "base greedy"),
                            ("A", 0.7, "base sampled"), ("B", 0.9, "base greedy"), ("B", 0.9, "base sampled"),
                            ("B", 0.9, "A")}  # the first model is never paired with itself; B has no 0.7
    for metric in PAIRED_METRICS:
        d, lo, hi = against[("B", 0.9, "A")][metric]
        assert lo <= d <= hi
    assert against[("B", 0.9, "A")]["nll_per_token"][0] == pytest.approx(0.2)
    assert against[("A", 0.9, "base sampled")]["worst_token_nll"] == pytest.approx([-1.0, -2.0, 0.0])
    assert against[("A", 0.7, "base greedy")]["nll_per_token"] == pytest.approx([0.5, 0.4, 0.6])  # extremes


def test_a_rereading_decode_pairs_with_the_same_model_without_it():
    """`--reread`: a decode that re-reads on doubt is paired with the decode of the same knob without re-reading
    (the first model's), and another model's re-reading decode with the first model's at the same threshold."""
    rereading = {**run("A", "token_prob", 0.9, [0.4, 0.4, 0.4], [2.0, 2.0, 2.0]), "reread": 0.5}
    other = {**run("B", "token_prob", 0.9, [0.5, 0.5, 0.5], [2.0, 2.0, 2.0]), "reread": 0.5}
    result = {"runs": [run("base greedy", "stop_head", 1.0, [0.4, 0.5, 0.6], [2.0, 2.0, 2.0]),
                       run("A", "token_prob", 0.9, [0.5, 0.5, 0.5], [3.0, 3.0, 3.0]), rereading, other]}
    firsts = [x for x in paired(result) if x["against"] == "A"]
    assert [(x["model"], x["reread"]) for x in firsts] == [("A", 0.5), ("B", 0.5)]
    assert firsts[0]["nll_per_token"][0] == pytest.approx(-0.1)  # A re-reading minus A without
    assert firsts[1]["worst_token_nll"][0] == pytest.approx(0.0)  # B minus A, both re-reading at 0.5


def test_a_prefiltered_decode_pairs_with_the_same_model_without_it():
    """`--prefilters`: a decode with a prefilter is paired with the first model's plain decode at the same knob."""
    plain = run("A", "token_prob", 0.8, [0.5, 0.5, 0.5], [3.0, 3.0, 3.0])
    filtered = {**run("A", "token_prob", 0.8, [0.4, 0.5, 0.3], [2.0, 3.0, 1.0]), "prefilter": 0.3}
    result = {"runs": [run("base greedy", "stop_head", 1.0, [0.4, 0.5, 0.6], [2.0, 2.0, 2.0]), plain, filtered]}
    firsts = [x for x in paired(result) if x["against"] == "A"]
    assert [(x["model"], x["prefilter"]) for x in firsts] == [("A", 0.3)]
    assert firsts[0]["nll_per_token"][0] == pytest.approx(-0.1)
    assert firsts[0]["worst_token_nll"][0] == pytest.approx(-1.0)


def test_a_tailed_decode_pairs_with_the_paper_layout_at_the_same_prefilter():
    """`--single-tails 0,1,1f`: single-tail and folded decodes are paired with the first model's decode in the paper's
    layout at the same knob and prefilter."""
    plain = {**run("A", "token_prob", 0.8, [0.5, 0.5, 0.5], [3.0, 3.0, 3.0]), "prefilter": 0.75}
    tail = {**run("A", "token_prob", 0.8, [0.4, 0.4, 0.4], [2.0, 2.0, 2.0]), "prefilter": 0.75, "single_tail": 1}
    fold = {**tail, **run("A", "token_prob", 0.8, [0.3, 0.5, 0.4], [1.0, 3.0, 2.0]), "fold_tail": True}
    result = {"runs": [run("base greedy", "stop_head", 1.0, [0.4, 0.5, 0.6], [2.0, 2.0, 2.0]), plain, tail, fold]}
    firsts = [x for x in paired(result) if x["against"] == "A"]
    assert [(x["single_tail"], x["fold_tail"]) for x in firsts] == [(1, False), (1, True)]
    assert [x["nll_per_token"][0] for x in firsts] == pytest.approx([-0.1, -0.1])
    assert firsts[1]["worst_token_nll"][0] == pytest.approx(-1.0)


def test_kind_summary_adds_the_rows_up():
    from benchmarks.decode_fidelity import kind_summary

    def row(single, after, micro, worst):
        return {"by_kind": {"single": single, "after_merge": after, "micro": micro}, "worst_kind": worst}

    rows = [row({"tokens": 3, "nll": 3.0, "spikes": 0}, {"tokens": 1, "nll": 6.0, "spikes": 1},
                {"tokens": 2, "nll": 1.0, "spikes": 0}, "after_merge"),
            row({"tokens": 1, "nll": 1.0, "spikes": 0}, {"tokens": 0, "nll": 0.0, "spikes": 0},
                {"tokens": 0, "nll": 0.0, "spikes": 0}, "single")]
    got = kind_summary(rows)
    assert got["by_kind"] == {"single": {"tokens": 4, "mean_nll": 1.0, "spikes": 0},
                              "after_merge": {"tokens": 1, "mean_nll": 6.0, "spikes": 1},
                              "micro": {"tokens": 2, "mean_nll": 0.5, "spikes": 0}}
    assert got["worst_kind_share"] == {"single": 0.5, "after_merge": 0.5, "micro": 0.0}
    assert kind_summary([{"tokens": 3}]) == {}  # rows saved before the field existed


def test_size_summary_adds_the_rows_up_by_slot_size():
    from benchmarks.decode_fidelity import size_summary

    rows = [{"after_merge_by_size": {"2": {"tokens": 3, "ok": 1, "nll": 6.0, "spikes": 1},
                                     "4": {"tokens": 1, "ok": 1, "nll": 0.5, "spikes": 0}}},
            {"after_merge_by_size": {"2": {"tokens": 1, "ok": 1, "nll": 2.0, "spikes": 0}}},
            {"tokens": 3}]  # a row saved before the field existed
    got = size_summary(rows)["after_merge_by_size"]
    assert list(got) == ["2", "4"]
    assert got["2"] == {"tokens": 4, "ok": 0.5, "mean_nll": 2.0, "spikes": 1}
    assert got["4"] == {"tokens": 1, "ok": 1.0, "mean_nll": 0.5, "spikes": 0}
    assert size_summary([{"tokens": 3}]) == {}


def test_a_verify_fold_decode_pairs_with_the_first_models_same_folding_only():
    """`--verify-folds`: a verify-mode decode pairs with the base's answers; the first model's folded ones with its plain
    verify mode (none), another model's with the first model's at the same folding and knob; never with a
    default-mode decode of the same knob."""
    def verify(model, fold, nll):
        return {**run(model, "verify", 0.5, nll, [2.0, 2.0, 2.0]), "verify_fold": fold}
    result = {"runs": [run("base greedy", "stop_head", 1.0, [0.4, 0.5, 0.6], [2.0, 2.0, 2.0]),
                       run("A", "token_prob", 0.5, [0.9, 0.9, 0.9], [2.0, 2.0, 2.0]), verify("A", "none", [0.4] * 3),
                       verify("A", "segments:8", [0.5, 0.5, 0.5]), verify("A", "forwards:4", [0.6, 0.6, 0.6]),
                       verify("B", "segments:8", [0.7, 0.7, 0.7]), verify("B", "none", [0.8] * 3)]}
    lines = paired(result)
    firsts = {(x["model"], x["verify_fold"]): x["nll_per_token"][0] for x in lines if x["against"] == "A"}
    assert firsts == pytest.approx({("A", "segments:8"): 0.1, ("A", "forwards:4"): 0.2, ("B", "segments:8"): 0.2,
                                    ("B", "none"): 0.4})
    assert {(x["model"], x["verify_fold"]) for x in lines if x["against"] == "base greedy"} == {
        ("A", None), ("A", "none"), ("A", "segments:8"), ("A", "forwards:4"), ("B", "segments:8"), ("B", "none")}


def test_kv_ratio_of_the_answers_leaves_the_prompts_out():
    from benchmarks.decode_fidelity import summarise
    rows = [{"tokens": t, "forwards": f, "kv_slots": kv, "kv_slots_ordinary": p + t - 1, "rereads": 0,
             "nll_per_token": 0.5, "worst_token_nll": 2.0, "rep4": 0.0, "micro": 0, "micro_ok": 0,
             "after_merge": 0, "after_merge_ok": 0} for t, f, kv, p in ((11, 8, 15, 10), (21, 14, 20, 5))]
    s = summarise(rows)
    assert s["kv_ratio"] == pytest.approx(35 / 45)
    assert s["kv_ratio_answer"] == pytest.approx((35 - 15) / (45 - 15))  # answer slots 5 + 15 of 10 + 20
    assert s["tau"] == pytest.approx(32 / 22)
