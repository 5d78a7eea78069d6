"""The one home of dataset checks (data/dataset): a segmented dataset is loaded and checked once."""

import json

import pytest

from hamburger.data.dataset import load_dataset, vocab_hash
from hamburger.errors import HamburgerError
from tests.helpers import FakeTokenizer


def write_dataset(path, rows, vocab=100, max_steps=4):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = {"kind": "hamburger-dataset", "settings": {"max_steps": max_steps},
            "tokenizer": {"name": "fake", "vocab_size": vocab, "vocab_hash": vocab_hash(FakeTokenizer(vocab))}}
    (path.parent / f"{path.name}.meta.json").write_text(json.dumps(meta))


def test_load_dataset_checks_every_row_once(tmp_path):
    path = tmp_path / "d.jsonl"
    good = {"id": "a", "prompt_ids": [1, 2], "response_ids": [3, 4, 5], "groups": [2, 1]}
    write_dataset(path, [good, dict(good, id="b", response_ids=[3, 90, 5])])
    rows, meta = load_dataset(path, FakeTokenizer(100), 4)
    assert len(rows) == 2 and meta["settings"]["max_steps"] == 4
    with pytest.raises(HamburgerError, match=r"line 2 \(id b\): token id outside the vocabulary \(50\)"):
        load_dataset(path, vocab_size=50)  # the model's embedding rows bound the ids too
    for bad, message in [({"response_ids": [], "groups": []}, "empty prompt or response"),
                         ({"prompt_ids": [1, -2]}, "token id outside the vocabulary"),
                         ({"groups": [1, 1, 1, 0]}, "groups .* do not cut")]:
        write_dataset(path, [good, good, dict(good, id="c", **bad)])
        with pytest.raises(HamburgerError, match=f"line 3 \\(id c\\): {message}"):
            load_dataset(path)
    with pytest.raises(HamburgerError, match="max_steps"):
        load_dataset(path, FakeTokenizer(100), 3)
