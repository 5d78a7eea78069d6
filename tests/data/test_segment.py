"""Segmentation strategies on hand-made entropies, H(p), and re-cutting a dataset without the model."""

import json
import os
import random

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
torch.set_num_threads(1)

from hamburger.cli.main import build_parser  # noqa: E402
from hamburger.errors import HamburgerError  # noqa: E402
from hamburger.data.dataset import check_dataset_compatible, load_dataset  # noqa: E402
from hamburger.data.segment import (STRATEGIES, SegmentSettings, decreasing, decreasing_v2,  # noqa: E402
                                    entropy_threshold, segment_entropies, sliding, small_group)
from tests.helpers import FakeTokenizer  # noqa: E402


def run_segment(argv):
    args = build_parser().parse_args(["segment", *argv])
    return args.func(args)


def test_entropy_threshold_values():
    assert entropy_threshold(0.95, 128256) == pytest.approx(0.787, abs=1e-3)
    assert entropy_threshold(0.7, 128256) == pytest.approx(4.139, abs=1e-3)
    assert entropy_threshold(0.7, 49152) == pytest.approx(3.85, abs=1e-2)
    with pytest.raises(HamburgerError):
        entropy_threshold(1.0, 100)


def test_decreasing_v2_hand_cut():
    e = [2.0, 0.5, 0.01, 0.7, 3.0, 0.04, 0.03, 0.02, 0.01, 1.0]
    assert decreasing_v2(e, 4) == [3, 1, 4, 1, 1]
    # abs threshold lets near-zero entropies join even a near-zero group; the max so far is the reference
    assert decreasing_v2([0.01, 0.02, 0.04, 1.0], 4) == [3, 1]
    assert decreasing_v2(torch.tensor(e), 4) == [3, 1, 4, 1, 1]


def test_decreasing_hand_cut():
    assert decreasing([2.0, 0.5, 0.01, 0.7, 3.0, 0.04, 0.03, 0.02, 0.01, 1.0], 4) == [3, 1, 4, 1, 1]
    assert decreasing([0.01, 0.02, 0.04, 1.0], 4) == [1, 1, 1, 1]
    assert decreasing([1.0, 0.3, 0.31, 0.09], 4, ratio=0.3) == [2, 2]


def test_sliding_hand_cut():
    assert sliding([0.5, 0.2, 2.0, 0.1, 0.1, 0.1, 0.1, 0.9, 1.5], 4, threshold=1.0) == [2, 4, 2, 1]


def test_small_group_hand_cut():
    e = [0.5, 0.2, 2.0, 0.1, 0.1, 0.1, 0.1, 1.5, 0.3]
    assert small_group(e, 3, threshold=1.0) == [2, 1, 3, 1, 1, 1]


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize("max_steps", [1, 2, 4, 5])
def test_groups_cover_response_and_respect_max_steps(name, max_steps):
    rng = random.Random(f"{name}{max_steps}")
    for n in [1, 2, 7, 50]:
        e = [rng.choice([0.0, 0.001, 0.02, 0.3, 1.0, 5.0]) * rng.random() for _ in range(n)]
        groups = segment_entropies(e, SegmentSettings(strategy=name, max_steps=max_steps), 49152)
        assert sum(groups) == n and all(1 <= g <= max_steps for g in groups)
        if max_steps == 1:
            assert groups == [1] * n
    assert segment_entropies([], SegmentSettings(strategy=name), 49152) == []


def test_unknown_strategy_lists_names():
    with pytest.raises(HamburgerError, match="decreasing_v2.*small_group"):
        segment_entropies([0.1], SegmentSettings(strategy="nope"), 100)


def _write_dataset(path, rows, vocab=100, max_steps=4):
    from hamburger.data.dataset import vocab_hash

    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    meta = {"kind": "hamburger-dataset", "format": 1, "strategy": "decreasing_v2", "max_steps": max_steps,
            "settings": {**SegmentSettings(max_steps=max_steps).__dict__},
            "tokenizer": {"name": "fake", "vocab_size": vocab, "vocab_hash": vocab_hash(FakeTokenizer(vocab))},
            "entropy_vocab_size": vocab, "base": "fake", "base_fingerprint": "0", "input": {}}
    with open(f"{path}.meta.json", "w") as f:
        json.dump(meta, f)


def _rows():
    rng = random.Random(0)
    rows = []
    for i in range(5):
        ent = [round(rng.choice([0.01, 0.5, 3.0, 6.0]) * rng.random(), 4) for _ in range(3 + 4 * i)]
        rows.append({"id": f"r{i}", "prompt_ids": [1, 2, 3], "response_ids": [7] * len(ent),
                     "groups": decreasing_v2(ent, 4), "entropies": ent})
    return rows


def test_resegment_from_dataset(tmp_path):
    from hamburger.data.segment import dataset_stats

    src, out = tmp_path / "d.jsonl", tmp_path / "s.jsonl"
    _write_dataset(src, _rows())
    source_meta = json.loads((tmp_path / "d.jsonl.meta.json").read_text())
    source_meta["stats"] = {**dataset_stats(_rows()), "left_out": {"r9": "empty"}}
    (tmp_path / "d.jsonl.meta.json").write_text(json.dumps(source_meta))
    assert run_segment(["--from-dataset", str(src), "--strategy", "sliding", "--out", str(out)]) == 0
    rows, meta = load_dataset(out)
    thr = entropy_threshold(0.7, 100)
    assert [r["groups"] for r in rows] == [sliding(r["entropies"], 4, thr) for r in _rows()]
    assert meta["strategy"] == "sliding" and meta["settings"]["strategy"] == "sliding"
    assert meta["derived_from"] == str(src)
    assert meta["stats"] == {**dataset_stats(rows), "last_run_skipped": {"done": 0}}  # its own, not the source's
    # resuming with the same settings adds nothing; with another strategy it is refused
    assert run_segment(["--from-dataset", str(src), "--strategy", "sliding", "--out", str(out)]) == 0
    assert len(load_dataset(out)[0]) == 5
    with pytest.raises(HamburgerError, match="other settings"):
        run_segment(["--from-dataset", str(src), "--strategy", "small_group", "--out", str(out)])
    with pytest.raises(HamburgerError, match="unknown strategy"):
        run_segment(["--from-dataset", str(src), "--strategy", "bogus", "--out", str(tmp_path / "x.jsonl")])


def test_load_dataset_validates_and_checks_compatibility(tmp_path):
    path = tmp_path / "d.jsonl"
    rows = _rows()
    _write_dataset(path, rows)
    got, meta = load_dataset(path)
    assert len(got) == 5
    check_dataset_compatible(meta, FakeTokenizer(100), 4)
    with pytest.raises(HamburgerError, match="max_steps"):
        check_dataset_compatible(meta, FakeTokenizer(100), 3)
    with pytest.raises(HamburgerError, match="tokenizer"):
        check_dataset_compatible(meta, FakeTokenizer(101), 4)
    rows[2]["groups"] = rows[2]["groups"][:-1]
    _write_dataset(path, rows)
    with pytest.raises(HamburgerError, match="line 3"):
        load_dataset(path)
    with pytest.raises(HamburgerError, match="missing"):
        load_dataset(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("key, value", [("groups", "3"), ("response_ids", [7, "7"]), ("prompt_ids", None),
                                        ("entropies", ["x"])])
def test_load_dataset_rejects_wrong_field_types(tmp_path, key, value):
    path = tmp_path / "d.jsonl"
    rows = _rows()
    rows[1][key] = value
    _write_dataset(path, rows)
    with pytest.raises(HamburgerError, match=f"line 2.*'{key}' must be a list"):
        load_dataset(path)
