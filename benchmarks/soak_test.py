"""Soak test of `hamburger serve`: a bounded mix of good and hostile requests from a few concurrent clients on
kept-alive connections, for --duration seconds; the server's RSS, /health latency and prompt cache bytes are sampled
every --sample s. Every answer must have the status its kind expects (200, or the OpenAI-shaped 4xx); at the end
one more good request must succeed and SIGTERM must drain and exit 0.

    python benchmarks/soak_test.py --duration 180 --out benchmarks/results/soak/results.json
    python benchmarks/soak_test.py --tiny --duration 60                     # tiny random model

Traffic goes to 127.0.0.1 only and is bounded by --duration and --clients.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.serve_process import serving, tiny_checkpoint  # noqa: E402

KEY = "sk-soak"
AUTH = {"Authorization": f"Bearer {KEY}"}
JSON = {**AUTH, "Content-Type": "application/json"}


def dumps(obj) -> bytes:
    return json.dumps(obj).encode()


def kinds(max_tokens: int, limit: int) -> list[tuple[str, int, dict]]:
    """(name, expected status, httpx request kwargs; "path" and "stream_break" are ours; a callable "content" makes
    each request's body)."""
    chat = {"messages": [{"role": "user", "content": "Say something about rivers."}], "max_tokens": max_tokens}
    completion = {"prompt": "Once upon a time", "max_tokens": max_tokens}
    numbers = itertools.count()
    digit = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"],
             "additionalProperties": False}
    tool = {**chat, "tools": [{"type": "function", "function": {"name": "pick", "parameters": digit}}],
            "tool_choice": {"type": "function", "function": {"name": "pick"}}}

    def unique_chat():  # a prompt no earlier request sent: the prompt cache fills, then evicts
        return dumps({**chat, "messages": [{"role": "user", "content": f"Say something about river {next(numbers)}."}]})

    async def big_chunks():  # no Content-Length: the server counts the bytes as they come
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536

    return [
        ("chat", 200, dict(path="/v1/chat/completions", content=dumps(chat), headers=JSON)),
        ("chat_unique", 200, dict(path="/v1/chat/completions", content=unique_chat, headers=JSON)),
        ("tool_call", 200, dict(path="/v1/chat/completions", content=dumps(tool), headers=JSON)),
        ("tool_custom", 200, dict(path="/v1/chat/completions", headers=JSON, content=dumps(
            {**chat, "tools": [{"type": "custom", "custom": {"name": "digits", "format": {
                "type": "grammar", "grammar": {"syntax": "regex", "definition": "[0-9]{1,6}"}}}}],
             "tool_choice": {"type": "custom", "custom": {"name": "digits"}}}))),
        ("tool_auto", 200, dict(path="/v1/chat/completions", content=dumps({**tool, "tool_choice": "auto"}),
                                headers=JSON)),
        ("structured_choice", 200, dict(path="/v1/completions", headers=JSON, content=dumps(
            {**completion, "structured_outputs": {"choice": ["yes", "no", "maybe"]}}))),
        ("structured_bad_regex", 400, dict(path="/v1/completions", headers=JSON, content=dumps(
            {**completion, "guided_regex": "("}))),
        ("response_stream", 200, dict(path="/v1/responses", headers=JSON, content=dumps(
            {"input": "Say something about lakes.", "max_output_tokens": max_tokens, "stream": True}))),
        ("tool_unknown", 400, dict(path="/v1/chat/completions", headers=JSON, content=dumps(
            {**tool, "tool_choice": {"type": "function", "function": {"name": "gone"}}}))),
        ("completion_stream", 200, dict(path="/v1/completions", content=dumps({**completion, "stream": True}),
                                        headers=JSON)),
        ("completion_stop", 200, dict(path="/v1/completions", content=dumps({**completion, "stop": ["\n", "."]}),
                                      headers=JSON)),
        ("stream_then_disconnect", 200, dict(path="/v1/completions", headers=JSON, stream_break=True,
                                             content=dumps({**completion, "stream": True, "max_tokens": 64}))),
        ("nested_json", 400, dict(path="/v1/chat/completions", content=b"[" * 100_000, headers=JSON)),
        ("lone_surrogate", 400, dict(path="/v1/completions", content=rb'{"prompt": "\ud83c", "max_tokens": 4}',
                                     headers=JSON)),
        ("bad_json", 400, dict(path="/v1/chat/completions", content=b'{"messages": [', headers=JSON)),
        ("five_stops", 400, dict(path="/v1/completions", content=dumps({**completion, "stop": list("abcde")}),
                                 headers=JSON)),
        ("unknown_field", 400, dict(path="/v1/completions", content=dumps({**completion, "frobnicate": 1}),
                                    headers=JSON)),
        ("too_long_prompt", 400, dict(path="/v1/completions", content=dumps({**completion, "prompt": "word " * 20000}),
                                      headers=JSON)),
        ("text_plain", 415, dict(path="/v1/completions", content=dumps(completion),
                                 headers={**AUTH, "Content-Type": "text/plain"})),
        ("oversized_declared", 413, dict(path="/v1/completions", content=b"x" * (limit + 1), headers=JSON)),
        ("oversized_chunked", 413, dict(path="/v1/completions", content=big_chunks, headers=JSON)),
        ("wrong_key", 401, dict(path="/v1/completions", content=dumps(completion),
                                headers={"Authorization": "Bearer nope", "Content-Type": "application/json"})),
        ("not_found", 404, dict(path="/v1/nothing", content=b"{}", headers=JSON)),
    ]


async def send(http: httpx.AsyncClient, url: str, spec: dict) -> int:
    spec = dict(spec)
    path, stream_break = spec.pop("path"), spec.pop("stream_break", False)
    if callable(spec.get("content")):
        spec["content"] = spec["content"]()
    async with http.stream("POST", url + path, **spec) as r:
        if stream_break:  # read two events, then go away: the server must free the row
            n = 0
            async for line in r.aiter_lines():
                n += line.startswith("data: ")
                if n == 2:
                    break
        else:
            body = await r.aread()
            if r.status_code != 200 and "error" not in json.loads(body):
                return -r.status_code  # not OpenAI-shaped
        return r.status_code


async def client(url: str, mix, end: float, offset: int, counts: Counter, bad: list):
    async with httpx.AsyncClient(timeout=120) as http:
        i = offset
        while time.monotonic() < end:
            name, expected, spec = mix[i % len(mix)]
            i += 1
            try:
                status = await send(http, url, spec)
            except httpx.HTTPError as e:
                status = f"{type(e).__name__}: {e}"
            counts[(name, status)] += 1
            if status != expected:
                bad.append({"kind": name, "expected": expected, "got": status})


async def sampler(url: str, pid: int, end: float, every: float, samples: list):
    proc = psutil.Process(pid)
    start = time.monotonic()
    async with httpx.AsyncClient(timeout=30) as http:
        while time.monotonic() < end:
            t = time.perf_counter()
            health = (await http.get(url + "/health")).json()
            samples.append({"t_s": round(time.monotonic() - start, 1), "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                            "health_ms": round(1000 * (time.perf_counter() - t), 1), "running": health["running"],
                            "waiting": health["waiting"], "prompt_cache_mb": round(sum(
                                c["bytes"] for c in health.get("prompt_cache", {}).values()) / 2**20, 1)})
            await asyncio.sleep(every)


async def soak(url: str, pid: int, args) -> tuple[Counter, list, list]:
    mix = kinds(args.max_tokens, args.max_request_bytes)
    counts, bad, samples = Counter(), [], []
    end = time.monotonic() + args.duration
    await asyncio.gather(sampler(url, pid, end, args.sample, samples),
                         *(client(url, mix, end, 5 * c, counts, bad) for c in range(args.clients)))
    return counts, bad, samples


def slope_mb_per_min(samples: list) -> float:
    """Least-squares slope of RSS over the second half of the run (after warm-up)."""
    half = samples[len(samples) // 2:]
    if len(half) < 2:
        return 0.0
    ts, ms = [s["t_s"] for s in half], [s["rss_mb"] for s in half]
    mt, mm = statistics.mean(ts), statistics.mean(ms)
    var = sum((t - mt) ** 2 for t in ts)
    return round(60 * sum((t - mt) * (m - mm) for t, m in zip(ts, ms)) / var, 2) if var else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="checkpoint folder (default: the bundled model)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random checkpoint (made in a temp folder)")
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of traffic")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--max-request-bytes", type=int, default=1 << 20)
    parser.add_argument("--sample", type=float, default=2.0, help="seconds between RSS samples")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-cache", type=float, default=None, metavar="MIB",
                        help="the server's --prompt-cache (default: its own; a small one fills, then churns, early)")
    parser.add_argument("--out", default=None, help="write the JSON record here")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    ckpt = tiny_checkpoint(Path(tmp.name)) if args.tiny else (Path(args.model) if args.model else None)
    server_args = ["--threads", str(args.threads), "--api-key", KEY, "--max-request-bytes", str(args.max_request_bytes),
                   *(["--prompt-cache", str(args.prompt_cache)] if args.prompt_cache is not None else [])]
    with serving(ckpt, Path(tmp.name) / "server.log", *server_args) as (url, proc):
        counts, bad, samples = asyncio.run(soak(url, proc.pid, args))
        after = httpx.post(url + "/v1/completions", headers=JSON, timeout=120,
                           content=dumps({"prompt": "Still there?", "max_tokens": 4}))
        prompt_cache = httpx.get(url + "/health").json()["prompt_cache"]
        proc.send_signal(signal.SIGTERM)
        start = time.perf_counter()
        exit_code = proc.wait(120)
        exit_s = time.perf_counter() - start
    rss = [s["rss_mb"] for s in samples]
    health = sorted(s["health_ms"] for s in samples)
    results = {
        "requests": sum(counts.values()), "unexpected": len(bad), "unexpected_examples": bad[:10],
        "by_kind": {f"{k} -> {s}": n for (k, s), n in sorted(counts.items(), key=str)},
        "rss_mb_first": rss[0], "rss_mb_last": rss[-1], "rss_mb_max": max(rss),
        "rss_mb_per_min_second_half": slope_mb_per_min(samples),
        "health_ms_p50": health[len(health) // 2], "health_ms_max": health[-1],
        "prompt_cache": prompt_cache, "good_request_after": after.status_code, "sigterm_exit_code": exit_code, "sigterm_exit_s": round(exit_s, 2),
        "samples": samples}
    from hamburger.bench.machine import machine_info

    record = {"benchmark": "soak_test", "model": "tiny random" if args.tiny else str(ckpt or "bundled default"),
              "settings": {k: v for k, v in vars(args).items() if k not in ("model", "tiny", "out")},
              "machine": machine_info(args.threads, "float32"), "results": results}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k != "samples"}, indent=2))
    tmp.cleanup()


if __name__ == "__main__":
    main()
