"""benchmarks/train_throughput.py: what a mode's settings are, and timed steps end to end on a tiny base."""

import argparse
import json
import sys

from benchmarks import train_throughput
from benchmarks.train_throughput import settings_for
from tests.helpers import tiny_base, write_dataset


def args(tmp_path, **kw) -> argparse.Namespace:
    config = tmp_path / "cfg.yaml"
    config.write_text("compile: true\ncompile_backend: eager\ndtype: bf16\n")
    base = dict(config=str(config), data="d.jsonl", steps=2, warmup=1, threads=1, device="cpu", base=None,
                dtype=None, loss_chunk=None, compile=False, compile_backend="inductor", compile_region="stack",
                max_tokens=None, batch_size=None, set=[])
    return argparse.Namespace(**{**base, **kw})


def test_only_the_flag_compiles(tmp_path):
    # a config's `compile: true` (the GPU full fine-tune's) must not turn a benchmark into a compile run
    s = settings_for("full+kl", args(tmp_path), str(tmp_path / "out"))
    assert s["compile"] is False and s["dtype"] == "bf16" and s["max_train_steps"] == 3
    s = settings_for("full+kl", args(tmp_path, compile=True), str(tmp_path / "out"))
    assert s["compile"] is True and s["compile_backend"] == "inductor"
    s = settings_for("full+kl", args(tmp_path, set=["compile=true"]), str(tmp_path / "out"))
    assert s["compile"] is True
    s = settings_for("full+kl", args(tmp_path, compile=True, compile_region="layer"), str(tmp_path / "out"))
    assert s["compile_region"] == "layer"


def test_timed_steps_end_to_end(tmp_path, char_tokenizer, monkeypatch):
    # the real script on a tiny base, in both KV layouts: a result line per mode with the tokens it timed
    base = tmp_path / "base"
    tiny_base("llama", seed=0).save_pretrained(base)
    char_tokenizer.save_pretrained(base)
    data = write_dataset(tmp_path / "data.jsonl", char_tokenizer)
    out = tmp_path / "result.jsonl"
    for tail in (0, 1):
        monkeypatch.setattr(sys, "argv", ["train_throughput.py", "--data", str(data), "--base", str(base), "--modes",
                                          "frozen", "--steps", "1", "--warmup", "1", "--device", "cpu", "--set",
                                          "decoder_layers=1", "--set", f"single_tail={tail}", "--out", str(out)])
        train_throughput.main()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["mode"] for r in lines] == ["frozen", "frozen"]
    assert all(r["response_tokens"] > 0 and r["base_positions"] > 0 and r["warmup_s"] > 0 for r in lines)
    assert all(r["compile_region"] is None and "graphs" not in r for r in lines)  # uncompiled
    assert lines[1]["base_positions"] > lines[0]["base_positions"]  # a single tail takes more slots
