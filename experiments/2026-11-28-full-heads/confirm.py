"""The confirmatory test's table (confirm.sh's run): fh4 on dev GSM8K rows 240-359 against the base's sampled answers
(three draws, paired per prompt) and, for repetition, the base's greedy answers: the issue's sampled bars.

    python experiments/2026-11-28-full-heads/confirm.py > experiments/2026-11-28-full-heads/confirm.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-27-draws"))
from summary import BASE, FOLD, FULL_HEADS, HEADER, METRICS, arm_row, diff  # noqa: E402

from hamburger.eval.paired import by_prompt  # noqa: E402


def main() -> None:
    run = HERE / "eval-rows240-360-fh4"
    got = by_prompt([json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()], task_of=None)
    print("## fh4 on fresh dev rows 240-359, three draws, 256 tokens (the columns paired with s45 are empty here)\n")
    print(HEADER)
    print(arm_row("fh4: af-reader with four full key/value heads", got, None, FULL_HEADS["fh4"]))
    print("\nfh4 - base (greedy), paired: rep4 " + diff(got[FOLD], got["base"], "rep4"))
    print("base-sampled - base (greedy), paired: " + ", ".join(f"{m} {diff(got[BASE], got['base'], m)}"
                                                              for m in METRICS))


if __name__ == "__main__":
    main()
