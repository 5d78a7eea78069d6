"""A tiny end-to-end `hamburger eval` run on a random checkpoint."""

import json

import pytest

from hamburger.cli.main import main
from tests.helpers import ESCAPE_ACTIONS, counted_generation, escape_code, save_tiny_checkpoint


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


def test_eval_verify_method_gives_the_base_answers(tmp_path, char_tokenizer):
    """`eval --verify`: lossless verify mode is one more method; its greedy answers are the base's, token for token."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "3", "--confidence", "0.5",
                 "--max-new-tokens", "10", "--verify", "--no-base-sampled", "--device", "cpu", "--out", str(out)]) == 0
    by = {s["method"]: s for s in json.loads((out / "summary.json").read_text())["summary"]}
    assert set(by) == {"base", "hamburger@0.5", "verify"}
    assert by["verify"]["exact"] == 1.0 and by["verify"]["nll_per_token"] == pytest.approx(by["base"]["nll_per_token"])
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    base = {r["id"]: r["text"] for r in rows if r["method"] == "base"}
    assert all(r["text"] == base[r["id"]] for r in rows if r["method"] == "verify")


def test_eval_verify_lookup_drafts_and_stays_lossless(tmp_path, char_tokenizer):
    """`eval --verify-lookup N`: verify mode also drafts by prompt lookup. At confidence 1.0 the MSD never drafts, so
    every token beyond one per forward came from a lookup draft; the answers are still the base's."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    taus = []
    for lookup in ("0", "4"):
        out = tmp_path / f"lookup-{lookup}"
        assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "3", "--confidence", "",
                     "--max-new-tokens", "24", "--verify", "--verify-confidence", "1.0", "--verify-lookup", lookup,
                     "--no-base-sampled", "--out", str(out)]) == 0
        by = {s["method"]: s for s in json.loads((out / "summary.json").read_text())["summary"]}
        assert by["verify"]["exact"] == 1.0
        taus.append(by["verify"]["tau"])
    assert taus[0] == 1.0 < taus[1]
    assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--verify", "--verify-lookup", "-1", "--out",
                 str(tmp_path / "bad")]) == 1


def test_eval_verify_fold_method(tmp_path, char_tokenizer):
    """`eval --verify-fold`: verify mode with folding is one more method. Folding later than any answer ends is
    verify mode on the checkpoint itself: here (no adapters) the base's answers."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    for spec, methods in (("segments:100", {"base", "verify-fold"}), ("forwards:0", {"base", "verify-fold"})):
        out = tmp_path / spec.replace(":", "-")
        assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "3", "--confidence", "",
                     "--max-new-tokens", "10", "--verify-fold", spec, "--no-base-sampled", "--out", str(out)]) == 0
        by = {s["method"]: s for s in json.loads((out / "summary.json").read_text())["summary"]}
        assert set(by) == methods
    assert by["verify-fold"]["tau"] >= 1.0 and by["verify-fold"]["confidence"] is None
    by = {s["method"]: s for s in json.loads((tmp_path / "segments-100" / "summary.json").read_text())["summary"]}
    assert by["verify-fold"]["exact"] == 1.0
    assert by["base"]["answer_kv_share"] == by["verify-fold"]["answer_kv_share"] == 1.0  # nothing folded
    assert by["base"]["kv_share"] == by["verify-fold"]["kv_share"] == 1.0
    assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--verify-fold", "segments", "--out",
                 str(tmp_path / "bad")]) == 1
    assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "2", "--confidence", "",
                 "--max-new-tokens", "6", "--verify-fold", "forwards:0", "--verify-confidence", "0.01",
                 "--no-base-sampled", "--out", str(tmp_path / "drafting")]) == 0
    by = {s["method"]: s for s in json.loads((tmp_path / "drafting" / "summary.json").read_text())["summary"]}
    assert by["verify-fold"]["confidence"] == 0.01
    rows = [json.loads(line) for line in (tmp_path / "drafting" / "examples.jsonl").read_text().splitlines()
            if json.loads(line)["method"] == "verify-fold"]  # the KV each answer held at its end
    assert all(r["kv_slots"] <= r["kv_slots_ordinary"] for r in rows)
    answer_slots = [r["kv_slots"] - (r["kv_slots_ordinary"] - r["tokens"] + 1) for r in rows]  # (less the prompt's)
    assert by["verify-fold"]["answer_kv_share"] == sum(answer_slots) / sum(r["tokens"] - 1 for r in rows) < 1.0
    whole = sum(r["kv_slots"] for r in rows) / sum(r["kv_slots_ordinary"] for r in rows)  # the prompt's slots too
    assert by["verify-fold"]["kv_share"] == whole < 1.0
    assert "KV (whole cache)" in (tmp_path / "drafting" / "summary.md").read_text()


def test_eval_samples_every_method_and_holds_it_to_the_base_sampled_answers(tmp_path, char_tokenizer, capsys):
    """`eval --sample`: each HAMburger method is decoded a second time with base-sampled's settings and seeds. At knob
    1.0 that is base-sampled's answers exactly; every band of a sampled method is against base-sampled; `--sample
    only` decodes the same sampled answers without the greedy ones."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    common = ["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "3", "--confidence", "1.0",
              "--max-new-tokens", "10", "--verify", "--verify-fold", "segments:100"]
    assert main(common + ["--sample", "--out", str(tmp_path / "also")]) == 0
    assert main(common + ["--sample", "only", "--out", str(tmp_path / "only")]) == 0
    rows = {name: [json.loads(line) for line in (tmp_path / name / "examples.jsonl").read_text().splitlines()]
            for name in ("also", "only")}
    text = {(r["method"], r["id"]): r["text"] for r in rows["also"]}
    ids = sorted({r["id"] for r in rows["also"]})
    greedy = ("hamburger@1", "verify", "verify-fold")
    assert {m for m, _ in text} == {"base", "base-sampled", *greedy, *(m + "-sampled" for m in greedy)}
    assert all(text["hamburger@1-sampled", i] == text["base-sampled", i] for i in ids)
    assert all(text["verify", i] == text["base", i] for i in ids)
    assert any(text["verify-sampled", i] != text["verify", i] for i in ids)  # (sampling is on)
    assert {r["method"] for r in rows["only"]} == {"base", "base-sampled", *(m + "-sampled" for m in greedy)}
    assert all(text[r["method"], r["id"]] == r["text"] for r in rows["only"])  # (same seeds, same answers)
    result = json.loads((tmp_path / "also" / "summary.json").read_text())
    refs = {(c["method"], c["band"]["metric"]): c["band"]["reference"] for c in result["comparisons"]}
    assert refs["verify-sampled", "rep4"] == "base-sampled" and refs["verify", "rep4"] == "base"
    assert refs["verify-fold-sampled", "nll_per_token"] == "base-sampled"
    assert result["meta"]["sample"] == "also"
    assert "delta is vs base-sampled" in (tmp_path / "also" / "summary.md").read_text()
    capsys.readouterr()
    assert main(common + ["--sample", "--no-base-sampled", "--out", str(tmp_path / "x")]) == 1
    assert "drop --no-base-sampled" in capsys.readouterr().err


def test_eval_reuses_the_base_answers_of_an_earlier_run(tmp_path, char_tokenizer, capsys):
    """`eval --reuse-base DIR`: the base's and base-sampled records come from DIR as they are (their timings too, so
    nothing was decoded again); other settings or other prompts are refused."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    common = ["eval", "--model", str(ckpt), "--tasks", "chat", "--confidence", "", "--max-new-tokens", "8"]
    assert main(common + ["--limit", "3", "--out", str(tmp_path / "first")]) == 0
    assert main(common + ["--limit", "3", "--verify-fold", "forwards:0", "--reuse-base", str(tmp_path / "first"),
                          "--out", str(tmp_path / "second")]) == 0
    rows = {name: [json.loads(line) for line in (tmp_path / name / "examples.jsonl").read_text().splitlines()]
            for name in ("first", "second")}
    assert [r for r in rows["second"] if r["method"] != "verify-fold"] == rows["first"]
    assert {r["method"] for r in rows["second"]} == {"base", "base-sampled", "verify-fold"}
    meta = json.loads((tmp_path / "second" / "summary.json").read_text())["meta"]
    assert meta["reused_base"] == str(tmp_path / "first")
    capsys.readouterr()
    for change, match in ((["--limit", "2"], "other prompts"), (["--limit", "3", "--max-new-tokens", "9"],
                                                                 "max_new_tokens")):
        assert main(common + change + ["--reuse-base", str(tmp_path / "first"), "--out", str(tmp_path / "x")]) == 1
        assert match in capsys.readouterr().err
    assert main(common + ["--reuse-base", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]) == 1
    assert "no earlier eval" in capsys.readouterr().err


def test_eval_killed_goes_on_where_it_stopped(tmp_path, char_tokenizer, capsys, monkeypatch):
    """Every batch's answers land in the folder's answers.partial.jsonl as they come: a run killed midway goes on from
    them (their timings too: nothing decoded again) to the same records, and the file goes once the run is written;
    other settings are refused while it is there."""
    import hamburger.eval.run as run_module

    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    out = tmp_path / "eval"
    run = ["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "3", "--confidence", "0.5", "--batch-size", "2",
           "--max-new-tokens", "8", "--out", str(out)]
    assert main(run) == 0
    whole = (out / "examples.jsonl").read_text()
    assert not (out / run_module.PROGRESS).exists()
    calls = []
    monkeypatch.setattr(run_module, "Generation", counted_generation(calls, stop_after=3))
    assert main(run) == 130  # (interrupted)
    progress = (out / run_module.PROGRESS).read_text().splitlines()
    assert len(progress) == 5  # (the base's 2 + 1, base-sampled's first 2)
    assert main([*run[:-4], "--max-new-tokens", "9", "--out", str(out)]) == 1
    assert "made with other settings" in capsys.readouterr().err
    weights = ckpt / "grafted.safetensors"  # (a checkpoint trained again in place: its answers are not these)
    saved = weights.read_bytes()
    weights.write_bytes(saved[:-1] + bytes([saved[-1] ^ 1]))
    assert main(run) == 1 and "checkpoint_files" in capsys.readouterr().err
    weights.write_bytes(saved)  # (the same bytes written again, a newer time: the same checkpoint)
    calls.clear()
    assert main(run) == 0
    assert len(calls) == 3 and "resuming: 5 answers" in capsys.readouterr().err  # (base-sampled's last, the knob's 2)
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    timing = {(json.loads(p)["method"], json.loads(p)["id"]): json.loads(p)["decode_s"] for p in progress}
    assert all(r["decode_s"] == timing[(r["method"], r["id"])] for r in rows if (r["method"], r["id"]) in timing)
    strip = lambda text: [{k: v for k, v in json.loads(line).items() if k != "decode_s"}  # noqa: E731
                          for line in text.splitlines()]
    assert strip((out / "examples.jsonl").read_text()) == strip(whole)
    assert not (out / run_module.PROGRESS).exists()


def test_eval_reused_base_answers_keep_the_chat_held_out_loss(tmp_path, char_tokenizer, capsys):
    """Chat's held-out loss of a knob is teacher-forced on the base's own token ids: the base records store them, so a
    run that reuses them gives the loss a run decoding the base again gives; records without them are refused."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    common = ["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "3", "--max-new-tokens", "8",
              "--no-base-sampled"]
    assert main(common + ["--confidence", "", "--out", str(tmp_path / "base")]) == 0
    assert main(common + ["--confidence", "0.5", "--out", str(tmp_path / "fresh")]) == 0
    assert main(common + ["--confidence", "0.5", "--reuse-base", str(tmp_path / "base"), "--out",
                          str(tmp_path / "reused")]) == 0
    by = {name: {s["method"]: {k: v for k, v in s.items() if k != "decode_tok_s"}  # (a timing)
                 for s in json.loads((tmp_path / name / "summary.json").read_text())["summary"]}
          for name in ("fresh", "reused")}
    assert by["reused"]["hamburger@0.5"] == by["fresh"]["hamburger@0.5"]  # (heldout_loss included)
    assert "heldout_loss" in by["reused"]["hamburger@0.5"]
    base_rows = [json.loads(line) for line in (tmp_path / "base" / "examples.jsonl").read_text().splitlines()]
    assert all(all(isinstance(t, int) for t in r["token_ids"]) for r in base_rows)
    assert any(r["token_ids"] for r in base_rows)
    older = tmp_path / "older"  # (an eval from before the ids were stored)
    older.mkdir()
    (older / "summary.json").write_text((tmp_path / "base" / "summary.json").read_text())
    (older / "examples.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "token_ids"}) + "\n"
                                                  for r in base_rows))
    capsys.readouterr()
    assert main(common + ["--confidence", "0.5", "--reuse-base", str(older), "--out", str(tmp_path / "x")]) == 1
    assert "held-out loss" in capsys.readouterr().err
    assert main(common + ["--confidence", "", "--reuse-base", str(older), "--out", str(tmp_path / "y")]) == 0


def test_eval_draws_answer_each_prompt_several_times_and_reuse_the_draws_it_has(tmp_path, char_tokenizer, capsys):
    """`eval --draws K`: every sampled method answers each prompt K times; draw 0 is a one-draw run's answers (same
    seeds), the other draws are seeded apart; the summary averages every draw and pairs per-prompt means. With
    --reuse-base the draws the earlier run holds are taken as they are and only the others are decoded."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    gsm = tmp_path / "gsm.jsonl"
    gsm.write_text("".join(json.dumps({"question": q, "answer": f"work\n#### {a}"}) + "\n"
                           for q, a in [("1+1?", 2), ("2+3?", 5), ("4+4?", 8)]))
    common = ["eval", "--model", str(ckpt), "--tasks", "gsm8k", "--gsm8k-file", str(gsm), "--limit", "3",
              "--confidence", "1.0", "--max-new-tokens", "10", "--sample", "only"]
    assert main(common + ["--out", str(tmp_path / "one")]) == 0
    assert main(common + ["--draws", "2", "--reuse-base", str(tmp_path / "one"), "--out", str(tmp_path / "two")]) == 0
    rows = {name: [json.loads(line) for line in (tmp_path / name / "examples.jsonl").read_text().splitlines()]
            for name in ("one", "two")}
    two = {(r["method"], r.get("draw"), r["id"]): r for r in rows["two"]}
    ids = sorted({r["id"] for r in rows["one"]})
    assert len(rows["two"]) == 3 + 2 * 3 + 2 * 3  # base; base-sampled and hamburger@1-sampled, 2 draws each
    for r in rows["one"]:  # draw 0: the one-draw run's answers (base-sampled's reused as they are, timings too)
        assert two[r["method"], r.get("draw"), r["id"]]["text"] == r["text"]
        if r["method"] in ("base", "base-sampled"):
            assert two[r["method"], r.get("draw"), r["id"]] == r
    assert any(two["base-sampled", 1, i]["text"] != two["base-sampled", 0, i]["text"] for i in ids)
    assert all(two["hamburger@1-sampled", 1, i]["text"] == two["base-sampled", 1, i]["text"] for i in ids)
    result = json.loads((tmp_path / "two" / "summary.json").read_text())
    by = {s["method"]: s for s in result["summary"]}
    assert by["base-sampled"]["examples"] == 3 and by["base-sampled"]["draws"] == 2 and "draws" not in by["base"]
    mean = sum(r["nll_per_token"] for r in rows["two"] if r["method"] == "base-sampled") / 6
    assert by["base-sampled"]["nll_per_token"] == pytest.approx(mean) and result["meta"]["draws"] == 2
    assert all(c["examples"] == 3 for c in result["comparisons"])
    assert "answered each prompt 2 times" in (tmp_path / "two" / "summary.md").read_text()
    capsys.readouterr()
    assert main(common + ["--draws", "0", "--out", str(tmp_path / "x")]) == 1
    assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "2", "--confidence", "",
                 "--draws", "2", "--no-base-sampled", "--out", str(tmp_path / "x")]) == 1
    assert capsys.readouterr().err.count("draws must be") == 2


def test_eval_rejects_bad_tasks(tmp_path, capsys):
    assert main(["eval", "--model", str(tmp_path), "--tasks", "mmlu"]) == 1
    assert "unknown task" in capsys.readouterr().err


def test_chat_file_gives_the_prompts(tmp_path):
    from hamburger.errors import HamburgerError
    from hamburger.eval.run import chat_examples

    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "prompt": "Hi"}\n\n{"prompt": "Two\\nlines"}\n')
    examples = chat_examples(5, str(path))
    assert [(e.id, e.prompt) for e in examples] == [("a", "Hi"), ("chat-file:1", "Two\nlines")]
    assert len(chat_examples(1, str(path))) == 1
    path.write_text('{"text": "no prompt"}\n')
    with pytest.raises(HamburgerError, match="prompt"):
        chat_examples(5, str(path))


class HostileServer:
    """An OpenAI-compatible chat endpoint that answers with the given completions, in order, then with
    the canonical solution of the problem it was asked about."""

    def __init__(self, completions: list[str]):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from hamburger.bench.prompts import humaneval_problems

        solutions = {p["prompt"]: p["canonical_solution"] for p in humaneval_problems()}
        queue = list(completions)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                asked = body["messages"][-1]["content"]
                text = queue.pop(0) if queue else next(s for p, s in solutions.items() if p in asked)
                reply = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": text}}],
                                    "usage": {"prompt_tokens": 1, "completion_tokens": 4, "total_tokens": 5}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply.encode())

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_eval_of_a_hostile_endpoint_leaves_no_trace(tmp_path, char_tokenizer, outside):
    """`eval --endpoint` executes whatever a server writes: every known escape stays inside the sandbox."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    hostile = ["```python\n" + escape_code(a, outside) + "```\n" for a in ESCAPE_ACTIONS.values()]
    server = HostileServer(hostile)
    out = tmp_path / "eval"
    try:
        assert main(["eval", "--model", str(ckpt), "--tasks", "humaneval", "--limit", str(len(hostile) + 2),
                     "--confidence", "1.0", "--max-new-tokens", "2", "--timeout", "5", "--endpoint", server.url,
                     "--out", str(out)]) == 0
    finally:
        server.close()
    rows = [json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    served = [r for r in rows if r["method"] == "endpoint"]
    assert len(served) == len(hostile) + 2
    for row in served[:len(hostile)]:
        assert row["passed"] == 0.0 and row["reason"].startswith("tried"), row["reason"]
    assert [r["passed"] for r in served[len(hostile):]] == [1.0, 1.0]  # honest answers still pass
    assert outside.traces() == []


def test_eval_refuses_humaneval_without_isolation(tmp_path, char_tokenizer, monkeypatch, capsys):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    monkeypatch.setenv("HAMBURGER_BWRAP", str(tmp_path / "no-bwrap"))
    capsys.readouterr()
    assert main(["eval", "--model", str(ckpt), "--tasks", "humaneval", "--limit", "1", "--confidence", "1.0",
                 "--out", str(tmp_path / "eval")]) == 1
    err = capsys.readouterr().err
    assert "refusing to execute generated code" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "eval").exists()
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
