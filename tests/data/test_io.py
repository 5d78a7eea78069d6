"""The one home of jsonl files and prompt files (data/io): reading, truncated tails, sidecars, shards."""

import gzip

import pytest

from hamburger.data.io import line_of, read_jsonl, read_prompt_file, read_sidecar, shard_path
from hamburger.errors import HamburgerError


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
    path.write_text('{"prompt": "a"}\n{"prompt": " \\n"}\n')
    with pytest.raises(HamburgerError, match=r"p\.jsonl:2: the prompt is empty"):
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
