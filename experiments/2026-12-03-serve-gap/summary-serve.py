"""Stages 2 and 3's tables (README.md): median completion tok/s over the repetitions of each load test.

    python summary-serve.py serve > summary-serve.txt              # stage 2: serve-1/ .. serve-3/
    python summary-serve.py draft-rows > summary-draft-rows.txt    # stage 3: draft-rows-1/ .. draft-rows-3/
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    stage = sys.argv[1]
    records = {}  # (name, batch) -> [results of each repetition]
    for rep in (1, 2, 3):
        for path in sorted((HERE / f"{stage}-{rep}").glob("*.json")):
            r = json.loads(path.read_text())["results"]
            records.setdefault((path.stem.rsplit("-b", 1)[0], r["max_batch_size"]), []).append(r)
    reference = "verify" if stage == "serve" else "d3"
    print(f"Median completion tok/s over repetitions (all in brackets); against {reference} at the same server batch\n")
    print(f"| server batch | run | tok/s | vs {reference} | mean tau | latency p50 s (median) |")
    print("|---|---|---|---|---|---|")
    for batch in sorted({b for _, b in records}):
        ref = statistics.median(r["tokens_per_s"] for r in records[(reference, batch)])
        for name in sorted({n for n, b in records if b == batch}, key=lambda n: (n != reference, n)):
            rs = records[(name, batch)]
            tps = statistics.median(r["tokens_per_s"] for r in rs)
            print(f"| {batch} | {name} | {tps:.1f} {[r['tokens_per_s'] for r in rs]} | {tps / ref:.3f}x | "
                  f"{statistics.median(r['mean_tau'] for r in rs):.3f} | "
                  f"{statistics.median(r['latency_s_p50'] for r in rs):.1f} |")
    tokens = {r["completion_tokens"] for rs in records.values() for r in rs}
    print("\nCompletion tokens per run:", sorted(tokens))


if __name__ == "__main__":
    main()
