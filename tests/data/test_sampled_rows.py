"""Sampled answers beside the main ones (issue 19 item 3): row ids, the fixed validation split, and the two recipe
scripts that make and split them (recipes/sampled_prompts.py, recipes/split_dataset.py), run as users run them."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hamburger.data.dataset import is_val_row, prompt_id, sample_id

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
IDS = [f"t0:{i}" for i in range(200)] + [f"gsm8k:{i}" for i in range(100)] + ["self_instruct:3.1"]


def script(name, *args):
    return subprocess.run([sys.executable, str(RECIPES / name), *map(str, args)], capture_output=True, text=True)


def test_sample_ids_name_their_prompt():
    for rid in IDS:
        assert sample_id(rid, 0) == rid
        assert [prompt_id(sample_id(rid, n)) for n in range(4)] == [rid] * 4
        assert sample_id(rid, 12) == f"{rid}#s12"
    assert prompt_id("a#s") == "a#s" and prompt_id("a#sx") == "a#sx" and prompt_id("a#s1#s2") == "a#s1"


def test_validation_split_is_the_old_rule_on_main_rows_and_follows_the_prompt():
    old = [int(hashlib.sha256(rid.encode()).hexdigest()[:8], 16) % 20 == 0 for rid in IDS]
    assert [is_val_row(rid) for rid in IDS] == old  # the datasets split before sampled rows keep their split
    assert 0 < sum(old) < len(IDS)
    for rid in IDS:
        assert is_val_row(sample_id(rid, 3)) == is_val_row(rid)


@pytest.fixture
def prompts(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"id": rid, "prompt": f"prompt {rid}", "source": rid.split(":")[0]}) + "\n"
                            for rid in IDS))
    return path


def test_sampled_prompts_are_the_training_prompts_under_sample_ids(prompts, tmp_path):
    out = tmp_path / "s2.jsonl"
    done = script("sampled_prompts.py", prompts, out, "--draw", "2", "--seed", "5")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    train = [rid for rid in IDS if not is_val_row(rid)]
    assert sorted(r["id"] for r in rows) == sorted(f"{rid}#s2" for rid in train)
    assert all(r["prompt"] == f"prompt {prompt_id(r['id'])}" and r["source"] == r["id"].split(":")[0] for r in rows)
    assert [r["id"] for r in rows] != [f"{rid}#s2" for rid in train]  # shuffled ...
    again = tmp_path / "again.jsonl"
    assert script("sampled_prompts.py", prompts, again, "--draw", "2", "--seed", "5").returncode == 0
    assert again.read_text() == out.read_text()  # ... the same way for one seed
    assert "--draw must be >= 1" in script("sampled_prompts.py", prompts, tmp_path / "x.jsonl", "--draw", "0").stderr
    val = tmp_path / "val.jsonl"
    assert script("sampled_prompts.py", prompts, val, "--split", "val").returncode == 0
    assert sorted(json.loads(line)["id"] for line in val.open()) == sorted(
        f"{rid}#s1" for rid in IDS if is_val_row(rid))
    refused = script("sampled_prompts.py", out, tmp_path / "x.jsonl")
    assert refused.returncode != 0 and "already holds sample ids" in refused.stderr


def dataset_row(rid):
    return {"id": rid, "prompt_ids": [1, 2], "response_ids": [3, 4, 5], "groups": [2, 1]}


def write_dataset(path, ids, **meta):
    path.write_text("".join(json.dumps(dataset_row(rid)) + "\n" for rid in ids))
    path.with_name(path.name + ".meta.json").write_text(json.dumps({"kind": "hamburger-dataset", **meta}))
    return path


def split(tmp_path, name, ids, *more):
    done = script("split_dataset.py", write_dataset(tmp_path / f"{name}.jsonl", ids, max_steps=4), tmp_path / name,
                  *more)
    assert done.returncode == 0, done.stderr
    return done.stdout, {part: [json.loads(line)["id"] for line in (tmp_path / name / f"{part}.jsonl").open()]
                         for part in ("train", "val")}


def test_split_keeps_validation_unchanged_and_trains_on_the_samples_of_training_prompts(tmp_path):
    _, main = split(tmp_path, "main", IDS)
    sampled = [sample_id(rid, n) for rid in IDS for n in (1, 2)]
    printed, both = split(tmp_path, "both", IDS + sampled)
    assert both["val"] == main["val"] and main["val"]
    assert both["train"] == main["train"] + [rid for rid in sampled if not is_val_row(rid)]
    assert f"dropped: {2 * len(main['val'])}" in printed
    meta = json.loads((tmp_path / "both" / "train.jsonl.meta.json").read_text())
    assert meta == {"kind": "hamburger-dataset", "max_steps": 4}
    # the sampled rows as a dataset of their own, added: the same split, and the meta names them
    extra = write_dataset(tmp_path / "extra.jsonl", sampled, max_steps=4)
    _, added = split(tmp_path, "added", IDS, "--add", extra)
    assert added == both
    assert json.loads((tmp_path / "added" / "val.jsonl.meta.json").read_text())["added"] == [str(extra)]
    other = write_dataset(tmp_path / "other.jsonl", sampled, max_steps=2)
    refused = script("split_dataset.py", tmp_path / "main.jsonl", tmp_path / "x", "--add", other)
    assert refused.returncode != 0 and "its max_steps differs" in refused.stderr
