"""The one home of each shared concept: jsonl files and prompt files (data/io), dataset checks (data/dataset),
attention masks (core/masks), the merged layout (core/packing), eos ids and stop strings (engine/prompt), the knob."""

import gzip
import json
from types import SimpleNamespace

import pytest
import torch

from hamburger.core.config import HamburgerConfig, check_confidence
from hamburger.core.masks import slot_mask
from hamburger.core.packing import TrainBatch, group_starts, group_tensors, pack, pad_group
from hamburger.data.dataset import load_dataset, vocab_hash
from hamburger.data.io import line_of, read_jsonl, read_prompt_file, read_sidecar, shard_path
from hamburger.engine.prompt import cut_at_stop, eos_ids, safe_prefix
from hamburger.engine.sampling import GenerationConfig
from hamburger.errors import HamburgerError
from tests.test_segment import FakeTokenizer


# ------------------------------------------------------------------------------------------ data/io
def test_read_jsonl_plain_gzip_and_blank_lines(tmp_path):
    text = '{"a": 1}\n\n   \n{"a": 2}\r\n["x"]\n'
    plain, packed = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    assert read_jsonl(plain) == read_jsonl(packed) == [{"a": 1}, {"a": 2}, ["x"]]
    assert line_of(plain, 2) == 4 and line_of(packed, 3) == 5


def test_read_jsonl_names_file_and_line_of_a_bad_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n\n{"a": oops}\n{"a": 3}\n')
    with pytest.raises(HamburgerError, match=r"r\.jsonl:3: not valid JSON") as e:
        read_jsonl(path, tail="ignore")  # a bad line before the end is an error whatever the tail mode
    assert "\n" not in str(e.value)
    with pytest.raises(HamburgerError, match="cannot read"):
        read_jsonl(tmp_path / "nope.jsonl")
    assert read_jsonl(tmp_path / "nope.jsonl", missing_ok=True) == []


def test_read_jsonl_truncated_last_line_error_ignore_or_cut(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    whole = '{"a": 1}\n{"a": 2}\n'
    path.write_text(whole + '{"a": 3, "b"')
    with pytest.raises(HamburgerError, match=":3: not valid JSON"):
        read_jsonl(path)
    assert read_jsonl(path, tail="ignore") == [{"a": 1}, {"a": 2}]
    assert "truncated last line" in capsys.readouterr().err
    assert path.read_text().endswith('"b"')  # ignored, not removed
    assert read_jsonl(path, tail="cut") == [{"a": 1}, {"a": 2}]
    assert path.read_text() == whole
    path.write_text('{"a": 1}\n{"a": 2}')  # a valid last line without a newline is a row
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]


def test_read_prompt_file(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a", "seed": 3}\n\n{"prompt": "b"}\n')
    assert read_prompt_file(path) == [{"prompt": "a", "seed": 3}, {"prompt": "b"}]
    path.write_text('{"prompt": "a"}\n\n{"text": "b"}\n')
    with pytest.raises(HamburgerError, match=r"p\.jsonl:3: each line needs a string field 'prompt'"):
        read_prompt_file(path)
    path.write_text("\n")
    with pytest.raises(HamburgerError, match="no prompts"):
        read_prompt_file(path)


def test_sidecars_and_shards(tmp_path):
    path = tmp_path / "d.jsonl"
    assert read_sidecar(path) == {}
    (tmp_path / "d.jsonl.meta.json").write_text('{"kind": "x"}')
    assert read_sidecar(path) == {"kind": "x"}
    assert shard_path(path, 0, 1) == path and shard_path(path, 1, 2).name == "d.jsonl.rank1"


# ------------------------------------------------------------------------------------------ data/dataset
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


# ------------------------------------------------------------------------------------------ core/masks
def brute_force_mask(valid, first, q):
    b, k = valid.shape
    out = torch.zeros(b, 1, q, k, dtype=torch.bool)
    for row in range(b):
        for i in range(q):
            for j in range(k):
                out[row, 0, i, j] = (j <= first + i and bool(valid[row, j])) or j == first + i
    return out


@pytest.mark.parametrize("seed", range(4))
def test_slot_mask_matches_brute_force(seed):
    g = torch.Generator().manual_seed(seed)
    valid = torch.rand(3, 7, generator=g) > 0.4
    assert torch.equal(slot_mask(valid), brute_force_mask(valid, 0, 7))
    for first, q in [(4, 3), (2, 1), (0, 5), (6, 1)]:
        assert torch.equal(slot_mask(valid, first, q), brute_force_mask(valid, first, q))
    assert torch.equal(slot_mask(valid, 5), brute_force_mask(valid, 5, 2))


# ------------------------------------------------------------------------------------------ core/packing
def test_group_helpers():
    assert group_starts([2, 1, 3]) == [0, 2, 3] and group_starts([]) == []
    assert pad_group([7, 8], 4) == [7, 8, 0, 0]
    tokens, sizes = group_tensors([[5], [6, 7, 8]], 3)
    assert tokens.tolist() == [[5, 0, 0], [6, 7, 8]] and sizes.tolist() == [1, 3]


def test_pack_lays_out_merged_and_unmerged_sequences():
    batch = TrainBatch([[1, 2, 3], [4, 5]], [[10, 11, 12, 13, 14], [20, 21]], [[2, 3], [1, 1]])
    p = pack(batch, 3)
    assert p.group_tokens.tolist() == [[10, 11, 0], [12, 13, 14], [20, 0, 0], [21, 0, 0]]
    assert p.group_sizes.tolist() == [2, 3, 1, 1]
    # row 0: prompt 1 2 3, then group [10 11] merged at the position of 11; row 1: prompt 4 5, then [20]
    assert p.valid.tolist() == [[True] * 4, [True, True, True, False]]
    assert p.positions.tolist() == [[0, 1, 2, 4], [0, 1, 2, 0]]
    assert [t.tolist() for t in p.merged_at] == [[0, 1], [3, 2]] and p.merged_group.tolist() == [0, 2]
    assert [t.tolist() for t in p.before_group] == [[0, 0, 1, 1], [2, 3, 1, 2]]
    assert p.ids.tolist() == [[1, 2, 3, 10, 11, 12, 13, 14], [4, 5, 20, 21, 0, 0, 0, 0]]
    assert [t.tolist() for t in p.response_at] == [[0] * 5 + [1] * 2, [2, 3, 4, 5, 6, 1, 2]]
    with pytest.raises(ValueError, match="exceeds max_steps"):
        pack(batch, 2)


# ------------------------------------------------------------------------------------------ engine/prompt, knob
def test_eos_ids_one_ordered_list():
    lm = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[7, 3]), config=SimpleNamespace(eos_token_id=3))
    assert eos_ids(lm, SimpleNamespace(eos_token_id=9)) == [7, 3, 9]
    bare = SimpleNamespace(config=SimpleNamespace(eos_token_id=None))
    assert eos_ids(bare, SimpleNamespace(eos_token_id=None)) == []
    with pytest.raises(HamburgerError, match="no end-of-sequence"):
        eos_ids(bare, SimpleNamespace(eos_token_id=None), required=True)


def test_stop_strings():
    assert cut_at_stop("one. two. END three", ["END", "two"]) == ("one. ", True)
    assert cut_at_stop("nothing", ["END"]) == ("nothing", False)
    assert safe_prefix("abc EN", ["END"]) == 4 and safe_prefix("ab\ufffd", []) == 2


def test_the_knob_range_is_checked_in_one_place():
    assert check_confidence(1.0) == 1.0
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(HamburgerError, match=r"confidence must be in \(0, 1\]"):
            check_confidence(bad)
    with pytest.raises(HamburgerError, match=r"^confidence must be in \(0, 1\], got 2"):
        GenerationConfig(confidence=2.0).validate()
    with pytest.raises(HamburgerError, match=r"^default_confidence must be in \(0, 1\]"):
        HamburgerConfig(default_confidence=0.0).validate()
