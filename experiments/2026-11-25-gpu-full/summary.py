"""Every in-run eval of the GPU runs trained from scratch on the same data (the recipe's 15,344 train rows) and
scored on the same 300 val rows, with the response tokens trained on before it and the wall minutes since the run
started: the matched-compute comparison of issue 19, item 1. Also the wall time that is not training steps
(compilation, evals, checkpoints).

    python experiments/2026-11-25-gpu-full/summary.py > experiments/2026-11-25-gpu-full/summary.txt

Other runs: `summary.py "LABEL=METRICS.jsonl" ...` (paths relative to the repository root).
"""

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = {  # label: metrics file (all three: fresh grafted modules, one H100, bf16 or fp32 as their configs say)
    "frozen (2026-11-22, fp32)": "benchmarks/results/gpu-default-model/frozen-metrics.jsonl",
    "lora-two-sets (bf16)": "experiments/2026-11-25-gpu-full/logs/lora-two-sets-metrics.jsonl",
    "full + KL (bf16, compiled)": "experiments/2026-11-25-gpu-full/logs/full-metrics.jsonl",
}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    runs = dict(arg.split("=", 1) for arg in sys.argv[1:]) or RUNS
    print("| run | step | response tokens before (M) | wall min | token acc | skip path (micro 1) | micro 2 / 3 / 4 "
          "| KL | stop acc |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, name in runs.items():
        log = rows(ROOT / name)
        start, seen = log[0]["time"], 0
        for r in log:
            if r["kind"] == "train":
                seen += r["tokens"]
            if r["kind"] != "eval":
                continue
            micro = r["token_acc_micro"]
            print(f"| {label} | {r['step']} | {seen / 1e6:.2f} | {(r['time'] - start) / 60:.1f} | "
                  f"{100 * r['token_acc']:.1f}% | {100 * micro[0]:.1f}% | "
                  f"{' / '.join(f'{100 * m:.1f}' for m in micro[1:])}% | {r['kl']:.2f} | {100 * r['stop_acc']:.1f}% |")
    print()
    for label, name in runs.items():
        log = rows(ROOT / name)
        train = [r for r in log if r["kind"] == "train"]
        gaps = [b["time"] - a["time"] for a, b in zip(log, log[1:])]
        slow = sorted(((g, b["kind"], b["step"]) for g, b in zip(gaps, log[1:])), reverse=True)[:3]
        print(f"{label}: {train[-1]['step']} steps, {sum(r['tokens'] for r in train):,} response tokens, "
              f"{(log[-1]['time'] - log[0]['time']) / 60:.1f} min wall, median {statistics.median(r['tok_s'] for r in train):,.0f}"
              f" tok/s in steps, peak {max(r.get('max_mem_gib', 0) for r in train):.1f} GiB; longest gaps between log "
              f"lines: " + ", ".join(f"{g:.0f} s before {k} {s}" for g, k, s in slow))


if __name__ == "__main__":
    main()
