"""The fixed train/dev split of the shipped data and the prompt-file builder."""

import json
import os

import pytest

from hamburger.cli.main import build_parser
from hamburger.errors import HamburgerError
from hamburger.data.prompts import PACKAGE_DATA, build_prompts, data_root, gsm8k_split, read_data_file, split_of

ALL = ["t0_prompts", "self_instruct", "gsm8k"]


SHARED = PACKAGE_DATA.parent.parent.parent / "shared" / "data"  # the upstream files, beside the repo here


@pytest.fixture(scope="module")
def root():
    return data_root()


def test_package_ships_the_data(monkeypatch):
    monkeypatch.delenv("HAMBURGER_DATA", raising=False)
    assert data_root() == PACKAGE_DATA
    for name in ("gsm8k/train.jsonl", "self_instruct/t0_prompts.jsonl", "self_instruct/seed_tasks.jsonl",
                 "ifeval/input_data.jsonl"):
        assert (PACKAGE_DATA / f"{name}.gz").is_file() and (PACKAGE_DATA / name).parent.joinpath("LICENSE").is_file()
    if not SHARED.is_dir():
        pytest.skip("the upstream data folder is not beside the repo")
    for name in ("gsm8k/train.jsonl", "self_instruct/t0_prompts.jsonl", "self_instruct/seed_tasks.jsonl"):
        assert read_data_file(PACKAGE_DATA / name) == read_data_file(SHARED / name), name


def test_split_is_pinned():
    # these values must never change: they define which prompts are held out
    assert [i for i in range(200) if split_of(f"prompt number {i}") == "dev"] == [
        2, 12, 25, 28, 30, 39, 77, 83, 132, 146, 177, 197]
    assert [split_of(t) for t in ["hello", "What is 2+2?", "", "a"]] == ["train"] * 4
    samples = [f"prompt number {i}" for i in range(4000)]
    assert 0.04 < sum(split_of(s) == "dev" for s in samples) / len(samples) < 0.06


def test_split_counts_are_pinned(root):
    dev = build_prompts(ALL, "dev", root=root)
    counts = {s: sum(r["source"] == s for r in dev) for s in ALL}
    assert counts == {"t0_prompts": 480, "self_instruct": 5, "gsm8k": 500}
    t0_all = build_prompts(["t0_prompts"], "all", root=root)
    assert 0.04 < counts["t0_prompts"] / len(t0_all) < 0.06


def test_gsm8k_last_500_rows_are_dev(root):
    n = len(read_data_file(root / "gsm8k" / "train.jsonl"))
    dev = build_prompts(["gsm8k"], "dev", root=root)
    train = build_prompts(["gsm8k"], "train", root=root)
    assert {r["id"] for r in dev} == {f"gsm8k:{i}" for i in range(n - 500, n)}
    assert len(train) == n - 500 and not {r["id"] for r in dev} & {r["id"] for r in train}
    assert gsm8k_split(n - 501, n) == "train" and gsm8k_split(n - 500, n) == "dev"
    assert all(r["answer"] and "####" in r["answer"] for r in dev)


def test_ids_unique_fields_and_interleaving(root):
    rows = build_prompts(ALL, "train", root=root)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) and len({r["prompt"] for r in rows}) == len(rows)
    assert {r["source"] for r in rows[:3]} == set(ALL)
    assert all("<|endoftext|>" not in r.get("reference", "") for r in rows)
    assert all(r["prompt"].strip() for r in rows)
    assert not {r["id"] for r in rows} & {r["id"] for r in build_prompts(ALL, "dev", root=root)}
    again = build_prompts(ALL, "train", limit=50, seed=0, root=root)
    assert again == rows[:50]
    assert build_prompts(ALL, "train", limit=50, seed=1, root=root) != again


def test_errors(root, tmp_path):
    with pytest.raises(HamburgerError, match="unknown prompt source"):
        build_prompts(["nope"], "train", root=root)
    with pytest.raises(HamburgerError, match="split"):
        build_prompts(ALL, "test", root=root)
    with pytest.raises(HamburgerError, match="not found"):
        data_root(tmp_path / "missing")


def test_cli_writes_file(root, tmp_path):
    out = tmp_path / "p.jsonl"
    args = build_parser().parse_args(["prompts", "--sources", "gsm8k,t0_prompts", "--split", "dev", "--limit", "7",
                              "--out", str(out), "--data", str(root)])
    assert args.func(args) == 0
    rows = [json.loads(line) for line in open(out)]
    assert len(rows) == 7 and {r["source"] for r in rows} == {"gsm8k", "t0_prompts"}
    assert os.path.exists(out) and not os.path.exists(f"{out}.partial")
