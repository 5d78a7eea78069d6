"""Where `hamburger serve` loses time against the engine alone: the same work (the 16 chat and GSM8K dev prompts of
`benchmarks/load_test.py --prompts dev`, greedy, 128 new tokens, lossless verify with the server's CPU drafting,
queued at once, continuous batching of up to B rows) run four ways, each adding one layer of the server:

- ``engine``: `VerifyGeneration` iterated in the main thread, rows added from ``poll`` (as ``../2026-12-03-store-speed/
  sim.py``);
- ``thread``: the same loop in a second thread while the main thread waits on it;
- ``scheduler``: `serve.scheduler.Scheduler` (its own thread) fed from an asyncio loop, each request's events turned
  into the server-sent events of a stream (`protocol.Chunks`, `sse`), no HTTP;
- ``server``: `hamburger serve` in its own process and 16 streaming `openai.AsyncOpenAI` clients in this one, as
  `benchmarks/load_test.py` runs them.

One JSON line per run: wall seconds, completion tokens, the CPU seconds of this process (and of the server process),
the CPU time the hypervisor gave other guests meanwhile (steal, from the
run's start to its end, warm-up and loading included), and each answer (token ids, or the text where only text comes
back). ``--mode verify_fold`` (stage 5) runs the same with the default fold, on the checkpoint's fold model, in
every way. ``--profile FILE`` (stage 6, in-process ways) runs the timed work under `torch.profiler` and writes its
table of ops by self CPU time to FILE.

    python probe.py --how engine --batch 1 --rep 1 >> probe.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
HOWS = ("engine", "thread", "scheduler", "server")
TOKENS, CLIENTS, THREADS = 128, 16, 2


def cpu_s(pid: int | None = None) -> float:
    """User + system CPU seconds of a process (this one by default), its threads included."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_s() -> float:
    """Seconds of CPU time the hypervisor gave other guests, summed over this machine's cores (/proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def in_process(how: str, batch: int, texts: list[str], release: bool = False, mode: str = "verify",
               profile: str | None = None) -> dict:
    import torch

    from hamburger.core.loading import fold_model, load_model
    from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.ngrams import model_ngrams
    from hamburger.engine.prompt import encode_prompt
    from hamburger.engine.sampling import DecodingConfig
    from hamburger.engine.verify import VerifyGeneration, on_base
    from hamburger.serve.server import CPU_DRAFT_ROWS

    torch.set_num_threads(THREADS)
    model, tokenizer, _, reference = load_model(None, reference=True)
    verify_model, ngrams = on_base(model, reference), model_ngrams(model, None)
    folding = parse_folding(DEFAULT_FOLD) if mode == "verify_fold" else None
    folded = fold_model(None, folding, model) if folding else None  # (serve's fold model)
    decoder = folded or verify_model
    ids = [encode_prompt(tokenizer, [{"role": "user", "content": t}]) for t in texts]
    cfg = DecodingConfig(max_new_tokens=TOKENS)

    def engine(prompt_ids: list[list[int]], rows: int) -> dict[int, list[int]]:
        waiting, answers, run = list(range(len(prompt_ids))), {}, None
        first = [waiting.pop(0) for _ in range(min(rows, len(waiting)))]
        row_prompt = dict(enumerate(first))

        def poll():
            while waiting and run.active_rows < rows:
                i = waiting.pop(0)
                row_prompt[run.add(prompt_ids[i], cfg)] = i

        run = VerifyGeneration(decoder, tokenizer, [prompt_ids[i] for i in first], [cfg] * len(first),
                               draft_vocab=decoder.draft_vocab, fold=folding, lookup=PromptLookup(), ngrams=ngrams,
                               draft_rows=CPU_DRAFT_ROWS, poll=poll)
        for event in run:
            if event.finish_reason is not None:
                answers[row_prompt[event.row]] = run.result(event.row).token_ids
                run.release(event.row)
        return answers

    def threaded(prompt_ids: list[list[int]], rows: int) -> dict[int, list[int]]:
        out = {}
        worker = threading.Thread(target=lambda: out.update(engine(prompt_ids, rows)))
        worker.start()
        worker.join()
        return out

    def scheduled(prompt_ids: list[list[int]], rows: int) -> dict[int, list[int]]:
        from hamburger.serve.protocol import Chunks, sse
        from hamburger.serve.scheduler import Request, Scheduler

        scheduler = Scheduler(model, tokenizer, rows, CLIENTS, 256, verify_model, folding, PromptLookup(),
                              CPU_DRAFT_ROWS, ngrams, folded).start()

        async def one(i: int, loop) -> list[int]:
            req = Request(prompt_ids[i], cfg, loop, mode=mode)
            scheduler.submit(req)
            chunks, sent = Chunks("chat", f"r{i}", "m", True), []
            while True:
                what, value = await req.queue.get()
                if what == "event":
                    sent.append(sse(chunks.text(value.text)))
                elif what == "done":
                    sent += [sse(p) for p in chunks.ending(value, 0)]
                    return value.token_ids
                else:
                    raise value

        async def everyone():
            loop = asyncio.get_running_loop()
            return await asyncio.gather(*(one(i, loop) for i in range(len(prompt_ids))))

        try:
            return dict(enumerate(asyncio.run(everyone())))
        finally:
            scheduler.stop()

    run = {"engine": engine, "thread": threaded, "scheduler": scheduled}[how]
    run(ids[:1], 1)  # warm-up (untimed), as load_test.py's one short request
    if release:  # the main thread hands back its OpenMP workers, as `hamburger serve` does before it serves
        from hamburger.serve.openmp import release_pool

        assert release_pool(), "no OpenMP runtime to release"
    recorder = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if profile else None
    cpu0, start = cpu_s(), time.perf_counter()
    with recorder or contextlib.nullcontext():
        answers = run(ids, batch)
    wall, cpu = time.perf_counter() - start, cpu_s() - cpu0
    if recorder is not None:
        table = recorder.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=48)
        Path(profile).write_text(table + "\n")
    tokens = sum(len(a) for a in answers.values())
    return {"wall_s": round(wall, 3), "tokens": tokens, "cpu_s": round(cpu, 2),
            "answers": [answers[i] for i in range(len(ids))]}


def over_http(batch: int, texts: list[str], keep_pool: bool = False, mode: str = "verify") -> dict:
    import tempfile

    from benchmarks.load_test import drive
    from benchmarks.serve_process import serving

    with tempfile.TemporaryDirectory() as tmp, serving(
            None, Path(tmp) / "server.log", "--threads", str(THREADS), "--dtype", "float32", "--max-batch-size",
            str(batch), "--max-queue", str(CLIENTS), "--mode", mode,
            launcher=str(Path(__file__).with_name("keep_pool.py")) if keep_pool else None) as (url, proc):
        asyncio.run(drive(url, texts[:1], 4, None, 600.0))  # warm-up, as load_test.py
        server0, cpu0, start = cpu_s(proc.pid), cpu_s(), time.perf_counter()
        outs = asyncio.run(drive(url, texts, TOKENS, None, 600.0))
        wall, cpu, server = time.perf_counter() - start, cpu_s() - cpu0, cpu_s(proc.pid) - server0
    return {"wall_s": round(wall, 3), "tokens": sum(o["tokens"] for o in outs), "cpu_s": round(cpu, 2),
            "server_cpu_s": round(server, 2), "answers": [o["text"] for o in outs]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--how", required=True, choices=HOWS)
    p.add_argument("--batch", type=int, required=True, help="the most rows one batch runs (serve's --max-batch-size)")
    p.add_argument("--rep", type=int, default=0)
    p.add_argument("--label", default="", help="a name for the code or settings under test")
    p.add_argument("--release", action="store_true",
                   help="in-process ways: the main thread hands back its OpenMP workers before the timed run "
                        "(`serve.openmp.release_pool`; the server does it itself since session 58)")
    p.add_argument("--keep-pool", action="store_true",
                   help="server way: the server keeps its main thread's OpenMP workers, as before session 58 "
                        "(`keep_pool.py`)")
    p.add_argument("--profile", metavar="FILE", help="in-process ways: profile the timed work, its op table to FILE")
    p.add_argument("--mode", default="verify", choices=("verify", "verify_fold"),
                   help="lossless verify (stages 1-1c) or verify_fold with the default fold (stage 5)")
    args = p.parse_args()
    if args.profile and args.how == "server":
        p.error("--profile profiles the in-process ways (the server runs in its own process)")
    from benchmarks.load_test import prompts
    from hamburger.bench.machine import machine_info

    texts = prompts(CLIENTS, "dev")
    steal0 = steal_s()
    if args.how == "server":
        record = over_http(args.batch, texts, args.keep_pool, args.mode)
    else:
        record = in_process(args.how, args.batch, texts, args.release, args.mode, args.profile)
    head = {"label": args.label, "how": args.how, "batch": args.batch, "rep": args.rep, "release": args.release,
            "keep_pool": args.keep_pool, "mode": args.mode, "profiled": bool(args.profile)}
    print(json.dumps({**head, **record, "steal_s": round(steal_s() - steal0, 2),
                      "machine": machine_info(THREADS, "float32")}), flush=True)


if __name__ == "__main__":
    main()
