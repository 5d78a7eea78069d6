"""The observation check.py tests: in two sampled long-math evals (60 GSM8K dev prompts, 256 tokens), lossless sampled
verify's answer lengths against the base's own samples (mean tokens, answers reaching 256), the per-prompt difference
averaged over both runs with its z, and the prompts where verify ran longest.

    E=experiments/2026-11-27-sampled-verify-length; python $E/evals.py > $E/evals.txt
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

RUNS = [Path(__file__).resolve().parents[1] / run for run in
        ("2026-11-27-kv-budget/eval-rows0-60-fresh-base", "2026-11-26-sampled-fold/eval-dev-t256-gsm8k-l60")]


def load(run: Path, method: str) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (run / "examples.jsonl").read_text().splitlines())
            if r["method"] == method}


def main() -> None:
    base, verify = [load(r, "base-sampled") for r in RUNS], [load(r, "verify-sampled") for r in RUNS]
    print("| run | base-sampled tokens | verify-sampled tokens | base-sampled at 256 | verify-sampled at 256 |")
    print("|---|---|---|---|---|")
    for run, b, v in zip(RUNS, base, verify):
        print(f"| {run.parent.name}/{run.name} | {statistics.mean(r['tokens'] for r in b.values()):.1f} | "
              f"{statistics.mean(r['tokens'] for r in v.values()):.1f} | {sum(r['tokens'] >= 256 for r in b.values())} "
              f"| {sum(r['tokens'] >= 256 for r in v.values())} |")
    ids = list(base[0])
    diff = {i: sum(v[i]["tokens"] for v in verify) / 2 - sum(b[i]["tokens"] for b in base) / 2 for i in ids}
    mean, se = statistics.mean(diff.values()), statistics.stdev(diff.values()) / len(ids) ** 0.5
    print(f"\nverify - base, per prompt, averaged over both runs: {mean:+.1f} tokens (se {se:.1f}, z {mean / se:.2f})")
    print("largest: " + ", ".join(f"{i} {d:+.1f}" for i, d in sorted(diff.items(), key=lambda x: -x[1])[:3]))


if __name__ == "__main__":
    main()
