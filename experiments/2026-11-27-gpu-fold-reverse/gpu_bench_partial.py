"""The lent GPU's first timing of verify mode (session 32, an H200), cut by the device window after 6 of its 10 prompts
(5 chat, 1 math; batch 1 only, eager; `recipes/lent-gpu/bench.sh`'s settings): per category and method, tokens per
forward and decode tokens/s summed over the prompts measured, and the speed against HF generate on the same prompts.
Too few prompts for a claim; kept so the next window's full run has a first point to compare with.

    python experiments/2026-11-27-gpu-fold-reverse/gpu_bench_partial.py \
        > experiments/2026-11-27-gpu-fold-reverse/gpu_bench_partial.txt
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

LOG = Path(__file__).resolve().parent / "gpu_run" / "bench-eager" / "bench_log.jsonl"


def main() -> None:
    lines = [json.loads(line) for line in LOG.read_text().splitlines()]
    header, session, prompts = lines[0]["header"], lines[1]["session"], lines[2:]
    totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0.0])
    counts: dict[str, set[str]] = defaultdict(set)
    for prompt in prompts:
        for row in prompt["rows"]:
            total = totals[row["category"], row["method"]]
            total[0] += row["tokens"]
            total[1] += row["forwards"]
            total[2] += row["decode_s"]
            counts[row["category"]].add(row["prompt_id"])
    print(f"{session['gpu']}, torch {session['torch']}, {header['settings']['dtype']}, eager, batch 1, "
          f"{header['settings']['max_new_tokens']} new tokens, best of {header['settings']['repeats']}, "
          f"commit {session['git_commit']}")
    print("\n| category | prompts | method | tokens per forward | decode tok/s | vs HF generate |")
    print("|---|---|---|---|---|---|")
    for (category, method), (tokens, forwards, seconds) in sorted(totals.items()):
        hf = totals[category, "hf_generate"]
        speed = tokens / seconds
        print(f"| {category} | {len(counts[category])} | {method} | {tokens / forwards:.2f} | {speed:.1f} | "
              f"{speed / (hf[0] / hf[2]):.2f}x |")


if __name__ == "__main__":
    main()
