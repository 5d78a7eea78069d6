"""Time to first token of short requests sent while one long prompt is being prefilled, by `--prefill-chunk`.

For each setting a fresh `hamburger serve` (the bundled model unless --model/--tiny) gets: a warm-up, short
requests alone (the baseline TTFT), then one long streamed completion and, --delay s later, --short short
streamed completions --gap s apart. `--prefill-chunk 0` is the whole prompt in one forward (the server before
chunked prefill); any other value reads long prompts that many tokens per macro step.

    python benchmarks/prefill_ttft.py --prefill-chunk 0 256 --long-tokens 4000 \\
        --out benchmarks/results/prefill-ttft/results.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.serve_process import serving, tiny_checkpoint  # noqa: E402

WORDS = ("river stone light window garden paper music winter market bridge cloud engine silver forest "
         "letter station mountain harbor lantern orchard").split()


def long_prompt(words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


async def stream_one(http: httpx.AsyncClient, url: str, prompt: str, max_tokens: int) -> dict:
    body = {"model": "m", "prompt": prompt, "max_tokens": max_tokens, "stream": True, "temperature": 0,
            "stream_options": {"include_usage": True}}
    start, first, usage = time.perf_counter(), None, None
    async with http.stream("POST", url + "/v1/completions", json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            first = first or time.perf_counter() - start
            usage = json.loads(line[6:]).get("usage") or usage
    return {"ttft_s": round(first, 3), "latency_s": round(time.perf_counter() - start, 3),
            "prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"]}


async def scenario(url: str, args) -> dict:
    async with httpx.AsyncClient(timeout=args.timeout) as http:
        await stream_one(http, url, "Hello there.", 4)  # warm-up
        alone = [await stream_one(http, url, f"Short question {i}: why is the sky blue?", args.max_tokens)
                 for i in range(args.short)]
        long_task = asyncio.create_task(stream_one(http, url, long_prompt(args.long_tokens), args.max_tokens))
        await asyncio.sleep(args.delay)

        async def short(i: int) -> dict:
            await asyncio.sleep(i * args.gap)
            return await stream_one(http, url, f"Short question {i}: why is the sky blue?", args.max_tokens)

        beside = await asyncio.gather(*(short(i) for i in range(args.short)))
        long = await long_task
    ttft = [r["ttft_s"] for r in beside]
    return {"short_alone": alone, "short_beside_long": beside, "long": long,
            "short_alone_ttft_s_median": round(statistics.median(r["ttft_s"] for r in alone), 3),
            "short_beside_long_ttft_s_median": round(statistics.median(ttft), 3),
            "short_beside_long_ttft_s_max": max(ttft)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="checkpoint folder (default: the bundled model)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random checkpoint (made in a temp folder)")
    parser.add_argument("--prefill-chunk", type=int, nargs="+", default=[0, 256], help="settings to compare")
    parser.add_argument("--long-tokens", type=int, default=4000, help="words in the long prompt (~tokens)")
    parser.add_argument("--short", type=int, default=4, help="short requests beside the long one")
    parser.add_argument("--delay", type=float, default=1.0, help="s between the long request and the first short")
    parser.add_argument("--gap", type=float, default=0.5, help="s between short requests")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", default=None, help="write the JSON record here")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    ckpt = tiny_checkpoint(Path(tmp.name)) if args.tiny else (Path(args.model) if args.model else None)
    runs = {}
    for chunk in args.prefill_chunk:
        server_args = ["--threads", str(args.threads), "--dtype", args.dtype, "--prefill-chunk", str(chunk)]
        with serving(ckpt, Path(tmp.name) / f"server-{chunk}.log", *server_args) as (url, _):
            runs[str(chunk)] = asyncio.run(scenario(url, args))
        summary = {k: v for k, v in runs[str(chunk)].items() if k.endswith(("median", "max"))}
        print(f"--prefill-chunk {chunk}: {json.dumps(summary)}; long: {json.dumps(runs[str(chunk)]['long'])}",
              flush=True)
    from hamburger.bench.machine import machine_info

    record = {"benchmark": "prefill_ttft", "model": "tiny random" if args.tiny else str(ckpt or "bundled default"),
              "settings": {k: v for k, v in vars(args).items() if k not in ("model", "tiny", "out")},
              "machine": machine_info(args.threads, args.dtype), "results": runs}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    tmp.cleanup()


if __name__ == "__main__":
    main()
