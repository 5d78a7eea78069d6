"""A tiny end-to-end `hamburger eval` run on a random checkpoint."""

import json

import pytest

from hamburger.cli import main
from tests.test_batch import save_tiny_checkpoint


def test_eval_end_to_end(tmp_path, char_tokenizer, capsys):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    gsm = tmp_path / "gsm.jsonl"
    gsm.write_text("".join(json.dumps({"question": q, "answer": f"work\n#### {a}"}) + "\n"
                           for q, a in [("1+1?", 2), ("2+3?", 5)]))
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(ckpt), "--tasks", "gsm8k,humaneval,chat", "--limit", "2",
                 "--confidence", "0.5,1.0", "--max-new-tokens", "8", "--gsm8k-file", str(gsm), "--timeout", "5",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())["summary"]
    by = {(s["task"], s["method"]): s for s in summary}
    methods = ("base", "base-sampled", "hamburger@0.5", "hamburger@1")
    assert set(by) == {(t, m) for t in ("gsm8k", "humaneval", "chat") for m in methods}
    # Confidence 1.0 is the base model's greedy decoding: perfect agreement with the base.
    assert by[("chat", "hamburger@1")]["exact"] == 1.0 and by[("chat", "hamburger@1")]["tau"] == 1.0
    assert "heldout_loss" in by[("chat", "hamburger@0.5")]
    lines = (out / "examples.jsonl").read_text().splitlines()
    assert len(lines) == 3 * 4 * 2
    # every answer is scored by the unchanged base; confidence 1.0 has the base's own plausibility
    assert by[("chat", "hamburger@1")]["nll_per_token"] == pytest.approx(by[("chat", "base")]["nll_per_token"])
    assert by[("chat", "base-sampled")]["nll_per_token"] != by[("chat", "base")]["nll_per_token"]
    assert "95% CI" in (out / "summary.md").read_text()
    assert (out / "quality_vs_tau.png").is_file() and "| task |" in capsys.readouterr().out


def test_eval_rejects_bad_tasks(tmp_path, capsys):
    assert main(["eval", "--model", str(tmp_path), "--tasks", "mmlu"]) == 1
    assert "unknown task" in capsys.readouterr().err


def test_chat_file_gives_the_prompts(tmp_path):
    from hamburger.errors import HamburgerError
    from hamburger.evaluate import chat_examples

    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "prompt": "Hi"}\n\n{"prompt": "Two\\nlines"}\n')
    examples = chat_examples(5, str(path))
    assert [(e.id, e.prompt) for e in examples] == [("a", "Hi"), ("chat-file:1", "Two\nlines")]
    assert len(chat_examples(1, str(path))) == 1
    path.write_text('{"text": "no prompt"}\n')
    with pytest.raises(HamburgerError, match="prompt"):
        chat_examples(5, str(path))


def test_ifeval_end_to_end(tmp_path, char_tokenizer):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(ckpt), "--tasks", "ifeval", "--limit", "3", "--confidence", "0.5",
                 "--max-new-tokens", "6", "--out", str(out)]) == 0
    data = json.loads((out / "summary.json").read_text())
    by = {s["method"]: s for s in data["summary"]}
    assert set(by) == {"base", "base-sampled", "hamburger@0.5"}
    for s in by.values():
        assert {"prompt_strict", "prompt_loose", "inst_strict", "inst_loose", "nll_per_token", "rep4"} <= set(s)
        assert 0.0 <= s["inst_loose"] <= 1.0 and s["inst_strict"] <= s["inst_loose"]
    metrics = {(c["method"], c["band"]["metric"]) for c in data["comparisons"]}
    assert ("hamburger@0.5", "inst_strict") in metrics and ("hamburger@0.5", "worst_token_nll") in metrics
    assert {t["method"] for t in data["ifeval_types"]} == {"base-sampled", "hamburger@0.5"}
    text = (out / "summary.md").read_text()
    assert "IFEval accuracy" in text and "per instruction type" in text
