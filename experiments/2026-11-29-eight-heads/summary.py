"""The README's tables: fh8 and fh4 on dev GSM8K rows 360-479 and 240-359 (three draws, 256 tokens), each against the
base's sampled answers, paired per prompt over the draws' means (95% bootstrap); then the rule's pairings: fh8 - fh4 on
each row set and pooled over both (rule 1), each arm's rep4 against the base's greedy answers (rule 2), and the
curve point fh4-kv62 - fh4 on rows 360-479.

    python experiments/2026-11-29-eight-heads/summary.py > experiments/2026-11-29-eight-heads/summary.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-27-draws"))
from summary import BASE, FOLD, HEADER, METRICS, arm_row, diff  # noqa: E402

from hamburger.eval.paired import by_prompt  # noqa: E402

# (row set, arm) -> (run folder, heads the records do not count themselves: session 48's patch counted no store)
RUNS = {("360-479", "fh4"): (HERE.parent / "2026-11-28-full-head-cache/eval-rows360-480-fh4", 0),
        ("360-479", "fh8"): (HERE / "eval-rows360-480-fh8", 0),
        ("240-359", "fh4"): (HERE.parent / "2026-11-28-full-heads/eval-rows240-360-fh4", 4),
        ("240-359", "fh8"): (HERE / "eval-rows240-360-fh8", 0),
        ("360-479", "fh4-kv62"): (HERE / "eval-rows360-480-fh4-kv62", 0)}
LABELS = {"fh4": "the default model (four full heads: 23:0, 18:2, 17:1, 20:2)",
          "fh8": "the default model with eight full heads (fh4's and 20:1, 26:0, 24:2, 23:2)",
          "fh4-kv62": "fh4 with the default fold under a KV budget, `...:kv=0.62` (a curve point)"}


def records(run: Path) -> dict | None:
    if not (run / "summary.json").exists():
        return None
    return by_prompt([json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()], task_of=None)


def pooled(sets: list[dict], method: str) -> dict:
    """One method's records of several row sets, each prompt's id prefixed by its row set's position."""
    return {f"{k}:{i}": draws for k, got in enumerate(sets) for i, draws in got[method].items()}


def main() -> None:
    both = []
    for rows in ("360-479", "240-359"):
        got = {arm: r for arm in LABELS if (rows, arm) in RUNS and (r := records(RUNS[rows, arm][0])) is not None}
        print(f"## Dev GSM8K rows {rows}, three draws, 256 tokens, sampled T 0.7 top-p 0.9")
        print("(the columns paired with s45 are empty here)\n")
        print(HEADER)
        for arm, r in got.items():
            print(arm_row(f"{arm}: {LABELS[arm]}", r, None, RUNS[rows, arm][1]))
        for arm in ("fh8", "fh4-kv62"):
            if arm in got and "fh4" in got:
                print(f"\n{arm} - fh4, paired: " + ", ".join(f"{m} {diff(got[arm][FOLD], got['fh4'][FOLD], m)}"
                                                            for m in METRICS))
        if "fh8" in got and "fh4" in got:
            both.append(got)
        for arm, r in got.items():
            print(f"{arm} - base (greedy), paired: rep4 {diff(r[FOLD], r['base'], 'rep4')}")
        print()
    if len(both) == 2:
        fh8, fh4 = (pooled([g[arm] for g in both], FOLD) for arm in ("fh8", "fh4"))
        base = pooled([g["fh4"] for g in both], BASE)
        print("## Pooled over both row sets (240 prompts x 3 draws)\n")
        print("fh8 - fh4, paired: " + ", ".join(f"{m} {diff(fh8, fh4, m)}" for m in METRICS))
        for name, arm in (("fh8", fh8), ("fh4", fh4)):
            print(f"{name} - base-sampled, paired: " + ", ".join(f"{m} {diff(arm, base, m)}" for m in METRICS))


if __name__ == "__main__":
    main()
