"""`hamburger bench --quick` as a smoke test on a tiny random checkpoint."""

import json

from hamburger.bench.methods import Measurement
from hamburger.bench.run import agreement, summarise
from hamburger.cli.main import main
from tests.helpers import save_tiny_checkpoint


def test_agreement():
    assert agreement([1, 2, 3], [1, 2, 3]) == (True, 1.0)
    assert agreement([1, 2, 4, 5], [1, 2, 3, 5]) == (False, 0.5)
    assert agreement([], [1]) == (False, 0.0)


def test_summary_compares_whole_caches():
    """``kv_vs_hf`` is the methods' measured cache bytes at the end, prompt included, pooled over the prompts, against
    HF generate's; the per-token figure takes each prompt token's slot off at its whole size (so a cache that holds
    its prompt in less than that reads 0 there)."""
    def row(category, method, kv_bytes, kv_slots):
        m = Measurement(method, 10, 10, 0.1, 1.0, kv_bytes, kv_slots, [], prompt_tokens=20)
        return {"category": category, "method": method, "tokens": m.tokens, "forwards": m.forwards, "ttft_s": m.ttft_s,
                "decode_s": m.decode_s, "first_tokens": 1, "kv_bytes": m.kv_bytes,
                "output_kv_bytes": m.output_kv_bytes, "identical_to_base": None, "matched_prefix": None}
    rows = [row("chat", "hf_generate", 3000, 30), row("chat", "verify_fold", 1200, 12),
            row("code", "hf_generate", 1000, 30), row("code", "verify_fold", 1000, 30)]
    by = {(s["category"], s["method"]): s for s in summarise(rows, 0)}
    assert by["chat", "verify_fold"]["kv_vs_hf"] == 0.4 and by["code", "verify_fold"]["kv_vs_hf"] == 1.0
    assert by["all", "verify_fold"]["kv_vs_hf"] == 2200 / 4000 and by["all", "hf_generate"]["kv_vs_hf"] == 1.0
    assert by["chat", "verify_fold"]["kv_bytes_per_token"] == 0  # (12 slots, fewer than the prompt's 20)
    # the weights a forward reads: the base's, or a method's own (llama.cpp's quantized file)
    read = {(s["category"], s["method"]): s["base_read_gbs"] for s in summarise(rows, 1000, {"verify_fold": 250})}
    assert read["chat", "verify_fold"] == 250 * 9 / 1.0 / 1e9 and read["chat", "hf_generate"] == 1000 * 9 / 1e9


def test_bench_quick_smoke(tmp_path, char_tokenizer, capsys):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p, "category": c}) + "\n"
                               for p, c in [("abc", "chat"), ("2+2=", "math"), ("def f(x):", "code")]))
    out = tmp_path / "bench"
    assert main(["bench", "--model", str(ckpt), "--quick", "--prompts", str(prompts), "--out", str(out),
                 "--methods", "hamburger,own_loop,hf_generate,prompt_lookup,early_exit",
                 "--lengths", "8,16", "--batch-sizes", "1,2", "--max-new-tokens", "12", "--device", "auto"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert {"machine", "rows", "summary", "length_sweep", "batch_sweep", "copy_bandwidth_gbs"} <= set(result)
    assert result["machine"]["threads"] >= 1 and "torch" in result["machine"]
    by = {(s["category"], s["method"]): s for s in result["summary"]}
    # Our own loop at confidence 1.0 is the base model's greedy decoding: same tokens as HF generate.
    assert by[("all", "own_loop")]["identical_to_base"] == 1.0
    assert by[("all", "own_loop")]["tau"] == 1.0
    assert by[("all", "hf_generate")]["speedup_vs_hf"] == 1.0 == by[("all", "own_loop")]["kv_vs_hf"]
    sweep = [r for r in result["length_sweep"] if r["method"] == "own_loop"]
    assert [r["new_tokens"] for r in sweep] == [8, 16] and sweep[1]["kv_bytes"] > sweep[0]["kv_bytes"]
    # The batch sweep ignores EOS: every method makes the same number of tokens per row.
    assert {r["tokens"] for r in result["batch_sweep"]} == {12, 24}
    for name in ("results.md", "tok_s.png", "length_sweep.png", "batch_sweep.png", "confidence_sweep.png"):
        assert (out / name).is_file(), name
    assert "| method |" in capsys.readouterr().out


def test_bench_resumes_from_its_log(tmp_path, char_tokenizer, capsys):
    """A killed run keeps what it measured: a rerun with the same settings measures only what is missing."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p, "category": "chat"}) + "\n" for p in ["abc", "xyz", "hi"]))
    out = tmp_path / "bench"
    args = ["bench", "--model", str(ckpt), "--quick", "--prompts", str(prompts), "--out", str(out),
            "--methods", "hamburger,hf_generate", "--confidences", "0.5", "--lengths", "", "--batch-sizes", "",
            "--max-new-tokens", "6", "--repeats", "3"]
    assert main(args) == 0
    log = out / "bench_log.jsonl"
    lines = log.read_text().splitlines()
    assert [sorted(json.loads(x))[0] for x in lines] == ["header", "session", "prompt_index", "prompt_index",
                                                        "prompt_index"]
    first = json.loads(lines[2])["rows"]
    assert all(len(r["decode_s_runs"]) == 3 for r in first)
    log.write_text("\n".join(lines[:3]) + "\n")  # as if killed after the first prompt
    assert main(args) == 0
    result = json.loads((out / "results.json").read_text())
    assert len(result["sessions"]) == 2 and result["sessions"][1]["prompts_already_measured"] == 1
    assert result["rows"][:2] == first  # kept, not re-measured
    assert len(result["rows"]) == 6
    summary = {(s["category"], s["method"]): s for s in result["summary"]}
    hf = summary[("all", "hf_generate")]
    runs = [r["decode_s_runs"] for r in result["rows"] if r["method"] == "hf_generate"]
    decoded = sum(r["tokens"] - r["first_tokens"] for r in result["rows"] if r["method"] == "hf_generate")
    per_repetition = [decoded / sum(x[k] for x in runs) for k in range(3)]
    assert (hf["tok_s_min"], hf["tok_s_max"]) == (min(per_repetition), max(per_repetition))
    assert "over 2 sessions" in (out / "results.md").read_text()
    # each session's copy bandwidth, measured as it began, is its own and in the report
    bandwidths = [s["copy_bandwidth_gbs"] for s in result["sessions"]]
    assert all(b > 0 for b in bandwidths) and result["copy_bandwidth_gbs"] == bandwidths[1]
    assert " / ".join(f"{b:.1f}" for b in bandwidths) + " GB/s in its sessions" in (out / "results.md").read_text()
    # Other settings do not mix into the same log; --restart starts over.
    capsys.readouterr()
    assert main(args[:-4] + ["--max-new-tokens", "7", "--repeats", "3"]) != 0
    assert "settings.max_new_tokens" in capsys.readouterr().err
    assert main(args + ["--restart"]) == 0
    assert len(json.loads((out / "results.json").read_text())["sessions"]) == 1


def test_bench_gpu_mode_compiles_both_paths(tmp_path, char_tokenizer):
    """`--compile BACKEND`: static caches and compiled per-step forwards for HAMburger, our own loop and HF
    generate (the eager backend here; inductor and CUDA graphs on a GPU). Same tokens as the base."""
    import torch._dynamo

    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "abc", "category": "chat"}) + "\n")
    out = tmp_path / "bench"
    torch._dynamo.reset()
    assert main(["bench", "--model", str(ckpt), "--quick", "--prompts", str(prompts), "--out", str(out),
                 "--methods", "hamburger,own_loop,hf_generate", "--confidences", "0.5", "--lengths", "",
                 "--batch-sizes", "", "--max-new-tokens", "8", "--compile", "eager"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["settings"]["compile"] == "eager" and result["settings"]["device"] == "cpu"
    by = {s["method"]: s for s in result["summary"] if s["category"] == "all"}
    assert by["own_loop"]["identical_to_base"] == 1.0
    assert torch._dynamo.utils.counters["frames"]["ok"] > 0  # something was compiled
    assert "GPU mode" in (out / "results.md").read_text()


def test_bench_times_each_fold_it_is_given(tmp_path, char_tokenizer, capsys):
    """`--folds A,B`: the verify_fold method once per spec, named by it, each folding its own way (the store keeps
    every token at fewer bits, the merging fold one slot per group); a bad spec, or folds without verify_fold, are refused before
    any model loads."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "abc", "category": "chat"}) + "\n")
    out, folds = tmp_path / "bench", ["forwards:4", "segments:3:none:bits=8/4:rotate"]
    args = ["bench", "--quick", "--prompts", str(prompts), "--out", str(out), "--lengths", "", "--batch-sizes", "",
            "--max-new-tokens", "24"]
    assert main(args + ["--model", str(ckpt), "--methods", "hf_generate,verify_fold", "--folds", ",".join(folds)]) == 0
    rows = {r["method"]: r for r in json.loads((out / "results.json").read_text())["rows"]}
    assert set(rows) == {"hf_generate"} | {f"verify_fold@{spec}" for spec in folds}
    merged, stored = (rows[f"verify_fold@{spec}"] for spec in folds)
    assert merged["kv_slots"] != stored["kv_slots"] and max(merged["kv_slots"], stored["kv_slots"]) < rows[
        "hf_generate"]["kv_slots"]
    missing = str(tmp_path / "no-such-model")
    for extra, message in [(["--methods", "verify_fold", "--folds", "segments:x"], "a folding is"),
                           (["--methods", "hf_generate", "--folds", "forwards:4"], "add verify_fold")]:
        capsys.readouterr()
        assert main(args + ["--model", missing] + extra) != 0
        assert message in capsys.readouterr().err


def test_bench_times_assisted_generation_with_the_assistant_given(tmp_path, char_tokenizer, capsys):
    """`--assistant MODEL` adds HF's assisted generation to the default methods, drafted by that model (here the
    checkpoint's own base, loaded again): the base's greedy answer, named in the results without its folder. The
    method without an assistant, or an assistant without the method, is refused."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "abc", "category": "chat"}) + "\n")
    out = tmp_path / "bench"
    args = ["bench", "--model", str(ckpt), "--quick", "--prompts", str(prompts), "--out", str(out), "--lengths", "",
            "--batch-sizes", "", "--max-new-tokens", "12"]
    assert main(args + ["--assistant", str(tmp_path / "base")]) == 0
    result = json.loads((out / "results.json").read_text())
    by = {s["method"]: s for s in result["summary"] if s["category"] == "all"}
    assert set(by) == {"hamburger@0.5", "hamburger@0.9", "own_loop", "hf_generate", "prompt_lookup", "assisted"}
    assert by["assisted"]["identical_to_base"] == 1.0 and by["assisted"]["tau"] > 1
    assert result["model"]["assistant"]["base"] == "base" and result["settings"]["methods"][-1] == "assisted"
    for extra, message in [(["--methods", "hf_generate,assisted"], "needs an assistant"),
                           (["--methods", "hf_generate", "--assistant", str(tmp_path / "base")], "add assisted")]:
        capsys.readouterr()
        assert main(args + ["--restart"] + extra) != 0
        assert message in capsys.readouterr().err
