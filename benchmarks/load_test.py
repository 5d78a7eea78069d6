"""Load test of `hamburger serve`: N concurrent streaming chat clients (openai's AsyncOpenAI) against a real
server process on this machine; reports requests/s, completion tokens/s, time to first chunk and latency, the
server's cores busy and the hypervisor's steal over the timed run (a disturbed run shows), and (--verify) checks
every greedy output against the engine's batch-1 result.

    python benchmarks/load_test.py --tiny --clients 32 --max-tokens 32 --verify          # tiny random model
    python benchmarks/load_test.py --model runs/untrained --clients 16 --max-tokens 64 --confidence 1.0
    python benchmarks/load_test.py --model default --mode verify --clients 8 --max-tokens 128   # the bundled model

Traffic goes to 127.0.0.1 only; the run is bounded by --clients and --timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.serve_process import (process_cpu_s, serving, steal_s, tiny_checkpoint,  # noqa: E402
                                      write_record)
TOPICS = ["bread", "rivers", "the moon", "bicycles", "tea", "owls", "snow", "clocks", "maps", "bees", "glass",
          "salt", "trains", "ink", "wind", "honey"]


def prompts(n: int, kind: str = "short", offset: int = 0) -> list[str]:
    """``short``: "Write two sentences about ..." (distinct per request); ``dev``: chat and GSM8K dev prompts in turn
    (`bench.prompts`, data training never sees; the verify modes' benchmarks use them), after the first ``offset`` of
    each category."""
    if kind == "short":
        return [f"Write two sentences about {TOPICS[i % len(TOPICS)]} (request {i})." for i in range(n)]
    from itertools import chain, zip_longest

    from hamburger.bench.prompts import category_prompts

    pairs = zip_longest(category_prompts("chat", offset + (n + 1) // 2)[offset:],
                        category_prompts("math", offset + n // 2)[offset:])
    return [p["prompt"] for p in chain.from_iterable(pairs) if p][:n]


async def one(client, text: str, max_tokens: int, confidence: float | None) -> dict:
    start, first, parts, usage = time.perf_counter(), None, [], None
    extra = {"confidence": confidence} if confidence is not None else None
    stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}],
                                                  max_tokens=max_tokens, stream=True, extra_body=extra,
                                                  stream_options={"include_usage": True})
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            first = first or time.perf_counter() - start
            parts.append(chunk.choices[0].delta.content)
        usage = chunk.usage or usage
    return {"text": "".join(parts), "tokens": usage.completion_tokens, "tau": usage.model_extra["hamburger"]["tau"],
            "ttft_s": first or 0.0, "latency_s": time.perf_counter() - start}


async def drive(url: str, texts: list[str], max_tokens: int, confidence: float | None, timeout: float):
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=timeout)
    try:
        return await asyncio.gather(*(one(client, t, max_tokens, confidence) for t in texts))
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="checkpoint folder, or 'default' for the bundled model")
    parser.add_argument("--tiny", action="store_true", help="use a tiny random checkpoint (made in a temp folder)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--prompts", default="short", choices=["short", "dev"],
                        help="short: 'Write two sentences about ...'; dev: chat and GSM8K dev prompts in turn")
    parser.add_argument("--offset", type=int, default=0,
                        help="with --prompts dev: skip this many dev prompts of each category first")
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--confidence", type=float, default=None, help="per-request confidence (default: server's)")
    parser.add_argument("--mode", default=None, choices=["hamburger", "verify", "verify_fold"],
                        help="the server's decoding mode (`hamburger serve --mode`; default: the server's default)")
    parser.add_argument("--draft-rows", type=int, default=None,
                        help="the server's --draft-rows (the verify modes draft only in forwards of up to N rows)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--verify", action="store_true",
                        help="compare each output with batch-1 greedy decoding (the base's, in verify mode)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", default=None, help="write the JSON record here")
    args = parser.parse_args()
    if not (args.model or args.tiny):
        parser.error("give --model CKPT or --tiny")
    tmp = tempfile.TemporaryDirectory()
    ckpt = None if args.model == "default" else Path(args.model) if args.model else tiny_checkpoint(Path(tmp.name))
    args_ = ["--threads", str(args.threads), "--dtype", args.dtype, "--max-batch-size", str(args.max_batch_size),
             "--max-queue", str(max(args.clients, 1))] + (["--mode", args.mode] if args.mode else []) + (
        ["--draft-rows", str(args.draft_rows)] if args.draft_rows is not None else [])
    with serving(ckpt, Path(tmp.name) / "server.log", *args_) as (url, server):
        texts = prompts(args.clients, args.prompts, args.offset)
        asyncio.run(drive(url, texts[:1], 4, args.confidence, args.timeout))  # warm-up
        cpu0, steal0, start = process_cpu_s(server.pid), steal_s(), time.perf_counter()
        outs = asyncio.run(drive(url, texts, args.max_tokens, args.confidence, args.timeout))
        wall = time.perf_counter() - start
        cpu, steal = process_cpu_s(server.pid), steal_s()
        batches = httpx.get(url + "/health").json()["batches"] - 1
    tokens = sum(o["tokens"] for o in outs)
    ttft = sorted(o["ttft_s"] for o in outs)
    lat = sorted(o["latency_s"] for o in outs)
    results = {"mode": args.mode or "server default", "draft_rows": args.draft_rows, "prompts": args.prompts,
               "offset": args.offset, "clients": args.clients, "max_tokens": args.max_tokens,
               "max_batch_size": args.max_batch_size, "batches": batches, "wall_s": round(wall, 3),
               "requests_per_s": round(args.clients / wall, 2), "completion_tokens": tokens,
               "tokens_per_s": round(tokens / wall, 1), "mean_tau": round(statistics.mean(o["tau"] for o in outs), 3),
               "ttft_s_p50": round(ttft[len(ttft) // 2], 3), "ttft_s_max": round(ttft[-1], 3),
               "latency_s_p50": round(lat[len(lat) // 2], 3), "latency_s_max": round(lat[-1], 3),
               # the server's cores busy over the timed run (its CPU seconds / wall), and the hypervisor's steal then
               "server_cores_busy": None if cpu is None else round((cpu - cpu0) / wall, 2),
               "steal_s": None if steal is None else round(steal - steal0, 2)}
    if args.verify:  # (the lossless verify mode's reference is the unchanged base's greedy decoding)
        import torch

        from hamburger.core.loading import load_model
        from hamburger.engine.generate import generate
        from hamburger.engine.prompt import encode_prompt
        from hamburger.engine.sampling import DecodingConfig

        if args.mode == "verify_fold":
            sys.exit("--verify compares with the engine's batch-1 output of modes hamburger and verify only")
        torch.set_num_threads(args.threads)
        model, tok, _, reference = load_model(str(ckpt) if ckpt else None, args.dtype, reference=True)
        lossless = (args.mode or "verify") == "verify"  # (serve's default mode)
        cfg = DecodingConfig(max_new_tokens=args.max_tokens, confidence=1.0 if lossless else args.confidence)
        same = sum(generate(reference if lossless else model, tok, encode_prompt(
            tok, [{"role": "user", "content": t}]), cfg).text == o["text"] for t, o in zip(texts, outs))
        results["equal_to_batch_1"] = f"{same}/{len(texts)}"
    from hamburger.bench.machine import machine_info

    record = {"benchmark": "load_test", "model": "tiny random" if args.tiny else str(ckpt or "default"),
              "machine": machine_info(args.threads, args.dtype), "results": results}
    write_record(args.out, record)
    tmp.cleanup()


if __name__ == "__main__":
    main()
