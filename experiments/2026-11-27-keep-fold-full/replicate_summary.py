"""Session 43's rule for the fold reader (README.md there): step 1 (greedy, 96 tokens) on 480 dev prompts, session
42's 240 (`eval-t96-l120-*`, step 5's same-code run as the shipped model's) pooled with the next 240
(`eval-t96-rows120-240-*`, `STEP=7 bash reader_suite.sh`). Each band of `hamburger eval` (per task, paired by prompt,
the project's bootstrap, 95%) for the reader and the shipped model, pooled and on the fresh 240 alone, and the verdict:
the reader ships if it holds by the point every pooled band the shipped model holds by the point.

    python experiments/2026-11-27-keep-fold-full/replicate_summary.py [NAME] \
        > experiments/2026-11-27-keep-fold-full/replicate.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hamburger.eval.paired import compare, paired_bootstrap

HERE = Path(__file__).parent
NAME = sys.argv[1] if len(sys.argv) > 1 else "reader"
SETS = {"rows 0-119": "eval-t96-l120-{}", "rows 120-239": "eval-t96-rows120-240-{}"}
ARMS = {"reader": NAME, "shipped": "s45"}


def records(run: str, tag: str) -> list[dict]:
    """A run's answers (the method's and the base's), ids prefixed by their prompt set so sets never collide."""
    lines = (HERE / run / "examples.jsonl").read_text().splitlines()
    return [dict(r, id=f"{tag}/{r['id']}") for r in map(json.loads, lines)]


def bands(rows: list[dict]) -> dict[tuple[str, str], dict]:
    return {(c["task"], c["band_text"]): c for c in compare(rows) if c["method"] == "verify-fold"}


def reader_minus_shipped(pooled: dict[str, list[dict]], task: str, metric: str) -> str:
    """The reader's answers paired with the shipped model's by prompt on one metric, pooled over both sets."""
    mine, theirs = ({r["id"]: r[metric] for r in pooled[arm] if r["task"] == task and r["method"] == "verify-fold"}
                    for arm in ARMS)
    ids = sorted(mine)
    diff, lo, hi = paired_bootstrap([mine[i] for i in ids], [theirs[i] for i in ids])
    return f"{task:6s} {metric:16s} reader - shipped n={len(ids)} {diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def main() -> None:
    pooled = {arm: [] for arm in ARMS}
    verdict = True
    for label, pattern in [*SETS.items(), ("pooled (the rule)", None)]:
        print(f"## {label}")
        found = {}
        for arm, tag in ARMS.items():
            if pattern is None:
                rows = pooled[arm]
            else:
                rows = records(pattern.format(tag), label)
                pooled[arm] += rows
            found[arm] = bands(rows)
        for key in sorted(found["reader"]):
            line = f"{key[0]:6s} {key[1]:38s}"
            for arm in ARMS:
                c = found[arm][key]
                line += (f" | {arm} n={c['examples']} {c['diff']:+.4f} [{c['lo']:+.4f}, {c['hi']:+.4f}] "
                         f"{'holds' if c['point_inside'] else 'MISSES'}")
            print(line)
            if pattern is None and found["shipped"][key]["point_inside"] and not found["reader"][key]["point_inside"]:
                verdict = False
        print()
    print("## pooled, the reader paired with the shipped model")
    for task in ("chat", "gsm8k"):
        for metric in ("nll_per_token", "worst_token_nll", "rep4"):
            print(reader_minus_shipped(pooled, task, metric))
    print()
    print(f"verdict: the reader {'ships' if verdict else 'does not ship'} (rule: README.md, session 43)")


if __name__ == "__main__":
    main()
