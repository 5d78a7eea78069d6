"""benchmarks/equal_tau.py: two quality-vs-tau curves compared at equal tau."""

import json

import pytest

from benchmarks.equal_tau import at_tau, curve


def point(tau, nll, worst=0.0, rep4=0.0, **extra):
    return {"tau": tau, "nll_per_token": nll, "worst_token_nll": worst, "rep4": rep4, **extra}


def test_interpolates_inside_the_curve_only():
    points = [point(1.0, 0.5), point(1.2, 0.9), point(1.6, 1.3)]
    assert at_tau(points, 1.1, "nll_per_token") == pytest.approx(0.7)
    assert at_tau(points, 1.4, "nll_per_token") == pytest.approx(1.1)
    assert at_tau(points, 1.6, "nll_per_token") == pytest.approx(1.3)
    assert at_tau(points, 0.99, "nll_per_token") is None and at_tau(points, 1.7, "nll_per_token") is None


def test_reads_decode_fidelity_results_and_eval_summaries(tmp_path):
    fidelity = tmp_path / "fidelity.json"
    fidelity.write_text(json.dumps({"runs": [{"model": "m", "summary": point(1.3, 0.8)},
                                             {"model": "base greedy", "summary": point(1.0, 0.4)},
                                             {"model": "m", "summary": point(1.1, 0.6)}]}))
    assert [p["tau"] for p in curve(f"{fidelity}:m")] == [1.1, 1.3]
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"summary": [point(1.0, 0.4, task="chat", method="base"),
                                               point(1.2, 0.7, task="chat", method="hamburger@0.7"),
                                               point(1.5, 0.9, task="gsm8k", method="hamburger@0.7")]}))
    assert [p["tau"] for p in curve(f"{summary}:chat")] == [1.2]
    with pytest.raises(SystemExit):
        curve(f"{summary}:code")


def test_picks_one_prefilter_and_anchors_at_the_base(tmp_path):
    fidelity = tmp_path / "fidelity.json"
    fidelity.write_text(json.dumps({"runs": [{"model": "base greedy", "summary": point(1.0, 0.4)},
                                             {"model": "m", "summary": point(1.3, 0.8)},
                                             {"model": "m", "prefilter": 0.5, "summary": point(1.2, 0.6)},
                                             {"model": "m", "prefilter": 0.0, "summary": point(1.1, 0.7)}]}))
    assert [p["tau"] for p in curve(f"{fidelity}:m")] == [1.1, 1.2, 1.3]
    assert [p["tau"] for p in curve(f"{fidelity}:m", prefilter=0.0)] == [1.1, 1.3]  # no field: prefilter 0
    assert [p["tau"] for p in curve(f"{fidelity}:m", prefilter=0.5, anchor_base=True)] == [1.0, 1.2]
    with pytest.raises(SystemExit):
        curve(f"{fidelity}:m", prefilter=0.3)


def test_picks_one_layout(tmp_path):
    fidelity = tmp_path / "fidelity.json"
    fidelity.write_text(json.dumps({"runs": [{"model": "m", "summary": point(1.3, 0.8)},
                                             {"model": "m", "single_tail": 1, "summary": point(1.2, 0.6)},
                                             {"model": "m", "single_tail": 1, "fold_tail": True,
                                              "summary": point(1.25, 0.7)}]}))
    assert [p["tau"] for p in curve(f"{fidelity}:m", tail="0")] == [1.3]  # no field: the paper's layout
    assert [p["tau"] for p in curve(f"{fidelity}:m", tail="1")] == [1.2]
    assert [p["tau"] for p in curve(f"{fidelity}:m", tail="1f")] == [1.25]
    with pytest.raises(SystemExit):
        curve(f"{fidelity}:m", tail="2")
