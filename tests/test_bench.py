"""`hamburger bench --quick` as a smoke test on a tiny random checkpoint."""

import json

from hamburger.bench import agreement
from hamburger.cli import main
from tests.test_batch import save_tiny_checkpoint


def test_agreement():
    assert agreement([1, 2, 3], [1, 2, 3]) == (True, 1.0)
    assert agreement([1, 2, 4, 5], [1, 2, 3, 5]) == (False, 0.5)
    assert agreement([], [1]) == (False, 0.0)


def test_bench_quick_smoke(tmp_path, char_tokenizer, capsys):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p, "category": c}) + "\n"
                               for p, c in [("abc", "chat"), ("2+2=", "math"), ("def f(x):", "code")]))
    out = tmp_path / "bench"
    assert main(["bench", "--model", str(ckpt), "--quick", "--prompts", str(prompts), "--out", str(out),
                 "--methods", "hamburger,own_loop,hf_generate,prompt_lookup,early_exit",
                 "--lengths", "8,16", "--batch-sizes", "1,2", "--max-new-tokens", "12"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert {"machine", "rows", "summary", "length_sweep", "batch_sweep", "copy_bandwidth_gbs"} <= set(result)
    assert result["machine"]["threads"] >= 1 and "torch" in result["machine"]
    by = {(s["category"], s["method"]): s for s in result["summary"]}
    # Our own loop at confidence 1.0 is the base model's greedy decoding: same tokens as HF generate.
    assert by[("all", "own_loop")]["identical_to_base"] == 1.0
    assert by[("all", "own_loop")]["tau"] == 1.0
    assert by[("all", "hf_generate")]["speedup_vs_hf"] == 1.0
    sweep = [r for r in result["length_sweep"] if r["method"] == "own_loop"]
    assert [r["new_tokens"] for r in sweep] == [8, 16] and sweep[1]["kv_bytes"] > sweep[0]["kv_bytes"]
    # The batch sweep ignores EOS: every method makes the same number of tokens per row.
    assert {r["tokens"] for r in result["batch_sweep"]} == {12, 24}
    for name in ("results.md", "tok_s.png", "length_sweep.png", "batch_sweep.png", "confidence_sweep.png"):
        assert (out / name).is_file(), name
    assert "| method |" in capsys.readouterr().out
