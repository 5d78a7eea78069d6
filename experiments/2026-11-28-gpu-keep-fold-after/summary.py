"""Step 2's table (decode.sh's runs and session 48's fh4): the arms on dev GSM8K rows 240-359, three draws,
256 tokens, against the base's sampled answers (paired per prompt, each prompt's draws averaged, 95% bootstrap) and,
for repetition, the base's greedy answers (the issue's sampled bars); then each arm - af-reader paired.

    E=experiments/2026-11-28-gpu-keep-fold-after; python $E/summary.py > $E/summary.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-27-draws"))
from summary import BASE, FOLD, FULL_HEADS, HEADER, METRICS, arm_row, diff  # noqa: E402

from hamburger.eval.paired import by_prompt  # noqa: E402

ARMS = {"kf-gpu": "the default model with this run's adapters as its fold reader",
        "af-reader": "the shipped default model (its fold reader: the CPU pilot af-warm)",
        "fh4": "af-reader with four full key/value heads (session 48, ../2026-11-28-full-heads/)"}
RUNS = {name: HERE / f"eval-rows240-360-{name}" for name in ARMS} | {
    "fh4": HERE.parent / "2026-11-28-full-heads" / "eval-rows240-360-fh4"}


def main() -> None:
    got = {name: by_prompt([json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()],
                           task_of=None)
           for name in ARMS if ((run := RUNS[name]) / "summary.json").exists()}
    print("## Dev GSM8K rows 240-359, three draws, 256 tokens (the columns paired with s45 are empty here)\n")
    print(HEADER)
    for name, rows in got.items():
        print(arm_row(f"{name}: {ARMS[name]}", rows, None, FULL_HEADS.get(name, 0)))
    for name, rows in got.items():
        print(f"\n{name} - base (greedy), paired: rep4 {diff(rows[FOLD], rows['base'], 'rep4')}")
    for name in ("kf-gpu", "fh4"):
        if name in got and "af-reader" in got:
            print(f"\n{name} - af-reader, paired: " + ", ".join(
                f"{m} {diff(got[name][FOLD], got['af-reader'][FOLD], m)}" for m in METRICS))
    if got:
        rows = next(iter(got.values()))
        print("\nbase-sampled - base (greedy), paired: " + ", ".join(
            f"{m} {diff(rows[BASE], rows['base'], m)}" for m in METRICS))


if __name__ == "__main__":
    main()
