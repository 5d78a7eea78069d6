"""Oversized and large request bodies against `hamburger serve`: how fast a 10 MB and a 50 MB prompt are refused
(413) and what they cost the server's RSS, and how long /health takes while a prompt just under
--max-request-bytes is parsed and tokenized (off the event loop).

    python benchmarks/big_bodies.py --out benchmarks/results/big-bodies/results.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.serve_process import serving, write_record  # noqa: E402

LIMIT = 1 << 20


def prompt_body(n_bytes: int) -> bytes:
    words = ("river stone light window garden paper music winter " * (n_bytes // 50 + 1))[:n_bytes]
    return json.dumps({"prompt": words, "max_tokens": 4}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    results = {}
    with serving(None, Path(tmp.name) / "server.log", "--threads", str(args.threads)) as (url, proc):
        server = psutil.Process(proc.pid)
        headers = {"Content-Type": "application/json"}
        for mb in (10, 50):
            body = prompt_body(mb << 20)
            rss = server.memory_info().rss
            start = time.perf_counter()
            r = httpx.post(url + "/v1/completions", content=body, headers=headers, timeout=300)
            results[f"{mb}MB"] = {"status": r.status_code, "code": r.json()["error"]["code"],
                                  "seconds": round(time.perf_counter() - start, 3),
                                  "rss_delta_mb": round((server.memory_info().rss - rss) / 2**20, 1)}
        near = prompt_body(LIMIT - 1000)  # just under the limit: parsed and tokenized, then refused as too long
        answer, health = {}, []

        def big():
            start = time.perf_counter()
            r = httpx.post(url + "/v1/completions", content=near, headers=headers, timeout=300)
            answer.update(status=r.status_code, code=r.json().get("error", {}).get("code"),
                          seconds=round(time.perf_counter() - start, 3))

        worker = threading.Thread(target=big)
        worker.start()
        while worker.is_alive():
            start = time.perf_counter()
            httpx.get(url + "/health", timeout=60)
            health.append(1000 * (time.perf_counter() - start))
            time.sleep(0.02)
        results["near_limit_prompt"] = {**answer, "bytes": len(near), "health_probes": len(health),
                                        "health_ms_max": round(max(health), 1),
                                        "health_ms_median": round(sorted(health)[len(health) // 2], 1)}
    from hamburger.bench.machine import machine_info

    record = {"benchmark": "big_bodies", "model": "bundled default", "max_request_bytes": LIMIT,
              "machine": machine_info(args.threads, "float32"), "results": results}
    write_record(args.out, record)
    tmp.cleanup()


if __name__ == "__main__":
    main()
