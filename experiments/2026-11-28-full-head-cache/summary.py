"""The README's table: the arms of decode.sh on dev GSM8K rows 360-479 (three draws, 256 tokens), each against the
base's sampled answers, paired per prompt over the draws' means (95% bootstrap), then the rule's pairings: fh4 -
af-reader, and each arm's rep4 against the base's greedy answers (the issue's repetition bar). The answers' KV is
eval's (`kv_slots`: with full heads the library counts their slots itself, measured in bytes).

    python experiments/2026-11-28-full-head-cache/summary.py > experiments/2026-11-28-full-head-cache/summary.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-27-draws"))
from summary import BASE, FOLD, HEADER, METRICS, arm_row, diff  # noqa: E402

from hamburger.eval.paired import by_prompt  # noqa: E402

ARMS = {"fh4": "the default model with the library's four full heads (`--full-heads 23:0,18:2,17:1,20:2`)",
        "af-reader": "the default model as shipped (its fold reader, no full heads)"}


def records(name: str) -> dict | None:
    run = HERE / f"eval-rows360-480-{name}"
    if not (run / "summary.json").exists():
        return None
    return by_prompt([json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()], task_of=None)


def main() -> None:
    arms = {name: got for name in ARMS if (got := records(name)) is not None}
    print("## Dev GSM8K rows 360-479 (no arm decoded them before), three draws, 256 tokens, sampled T 0.7 top-p 0.9")
    print("(the columns paired with s45 are empty here)\n")
    print(HEADER)
    for name, got in arms.items():
        print(arm_row(f"{name}: {ARMS[name]}", got, None))
    if len(arms) == 2:
        print("\nfh4 - af-reader, paired: " + ", ".join(
            f"{m} {diff(arms['fh4'][FOLD], arms['af-reader'][FOLD], m)}" for m in METRICS))
    for name, got in arms.items():
        print(f"{name} - base (greedy), paired: rep4 {diff(got[FOLD], got['base'], 'rep4')}")
    if arms:
        got = next(iter(arms.values()))
        print("base-sampled - base (greedy), paired: " + ", ".join(f"{m} {diff(got[BASE], got['base'], m)}"
                                                                  for m in METRICS))


if __name__ == "__main__":
    main()
