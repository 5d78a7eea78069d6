"""Checkpoints: save -> load gives identical outputs; a wrong base is refused; bad folders are clear errors."""

import json

import pytest
import torch

from hamburger.base import BaseInfo, weights_fingerprint
from hamburger.checkpoint import CONFIG_FILE, WEIGHTS_FILE, load_checkpoint, read_meta, save_checkpoint
from hamburger.errors import HamburgerError
from hamburger.generate import generate
from hamburger.sampling import GenerationConfig
from tests.conftest import tiny_base, tiny_hamburger


def save_tiny(tmp_path, char_tokenizer, seed=3):
    base_dir = tmp_path / "base"
    model = tiny_hamburger("llama", seed=seed)
    model.base.save_pretrained(base_dir)
    char_tokenizer.save_pretrained(base_dir)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(model.base))
    ckpt = save_checkpoint(model, tmp_path / "ckpt", info)
    return model, ckpt, base_dir


def test_save_load_identical_outputs(tmp_path, char_tokenizer):
    model, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    loaded, tokenizer, _ = load_checkpoint(ckpt)
    for name, tensor in model.grafted_state_dict().items():
        assert torch.equal(tensor, loaded.grafted_state_dict()[name]), name
    cfg = GenerationConfig(max_new_tokens=20, confidence=0.5)
    a = generate(model, char_tokenizer, [1, 40, 41, 42], cfg)
    b = generate(loaded, tokenizer, [1, 40, 41, 42], cfg)
    assert (a.token_ids, a.groups) == (b.token_ids, b.groups)
    assert not list(tmp_path.glob("*.tmp")), "no temporary folder is left behind"


def test_wrong_base_is_refused(tmp_path, char_tokenizer):
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    other = tmp_path / "other"
    tiny_base("llama", seed=99).save_pretrained(other)
    char_tokenizer.save_pretrained(other)
    with pytest.raises(HamburgerError, match="fingerprint"):
        load_checkpoint(ckpt, base=str(other))


def test_fingerprint_ignores_dtype():
    base = tiny_base("llama", seed=1)
    assert weights_fingerprint(base) == weights_fingerprint(tiny_base("llama", seed=1))
    assert weights_fingerprint(base) != weights_fingerprint(tiny_base("llama", seed=2))


def test_bad_checkpoints_give_clear_errors(tmp_path, char_tokenizer):
    with pytest.raises(HamburgerError, match="does not exist"):
        read_meta(tmp_path / "missing")
    with pytest.raises(HamburgerError, match="not a HAMburger checkpoint"):
        read_meta(tmp_path)
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    (ckpt / CONFIG_FILE).write_text("{not json")
    with pytest.raises(HamburgerError, match="not valid JSON"):
        read_meta(ckpt)
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    meta = json.loads((ckpt / CONFIG_FILE).read_text())
    meta["config"]["bogus"] = 1
    (ckpt / CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(HamburgerError, match="unknown HAMburger config fields"):
        load_checkpoint(ckpt)
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    (ckpt / WEIGHTS_FILE).write_bytes(b"garbage")
    with pytest.raises(HamburgerError, match="cannot read"):
        load_checkpoint(ckpt)
