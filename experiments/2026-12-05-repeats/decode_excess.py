"""Where the decodes' extra repetition comes from (README.md, question 3's context; no model). By hand, from the
repository root (X=experiments/2026-12-05-repeats): .venv/bin/python $X/decode_excess.py > $X/decode-excess.md

The committed decodes of `../2026-12-03-default-knob-fold/calibration/` (120 chat and 120 GSM8K dev prompts, 96
tokens, the default model in the folding layout, and the base's greedy answers to the same prompts): per prompt, the
HAMburger answer's rep4 minus the base's. The mean of that difference is split into the part that answers which
loop (rep4 > 0.5, the answers `max_repeat: 0.5` leaves out of training) carry and the rest, and into large
differences (more than 0.2) and small ones.
"""
from __future__ import annotations

import json
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "2026-12-03-default-knob-fold" / "calibration" / "examples.jsonl"
LOOP_REP4 = 0.5
LARGE = 0.2
EXAMPLE = ("gsm8k", "gsm8k:7462", "hamburger@0.95", "number of gold bars that can be distributed to the 4 friends")


def main() -> None:
    rows = [json.loads(line) for line in EXAMPLES.open()]
    by = {(r["task"], r["method"], r["id"]): r["rep4"] for r in rows}
    texts = {(r["task"], r["method"], r["id"]): r["text"] for r in rows}
    methods = sorted({r["method"] for r in rows if r["method"].startswith("hamburger@")
                      and r["confidence"] < 1})
    print(f"`{EXAMPLES.relative_to(EXAMPLES.parents[3])}`: HAMburger's rep4 minus the base's greedy answer's, per "
          "prompt\n")
    print("| task | decoding | prompts | mean difference | in answers that loop (HAMburger / base loops) | "
          f"in differences > {LARGE} (answers) | in the rest |")
    print("|---|---|---|---|---|---|---|")
    for task in ("chat", "gsm8k"):
        ids = [i for (t, m, i) in by if t == task and m == "base"]
        for method in methods:
            pairs = [(by[(task, method, i)], by[(task, "base", i)]) for i in ids]
            diffs = [h - b for h, b in pairs]
            n = len(pairs)
            looped = sum(h - b for h, b in pairs if h > LOOP_REP4 or b > LOOP_REP4)
            loops = (sum(h > LOOP_REP4 for h, _ in pairs), sum(b > LOOP_REP4 for _, b in pairs))
            large = [d for d in diffs if abs(d) > LARGE]
            print(f"| {task} | {method} | {n} | {sum(diffs) / n:+.3f} | {looped / n:+.3f} ({loops[0]} / {loops[1]}) | "
                  f"{sum(large) / n:+.3f} ({len(large)}) | {(sum(diffs) - sum(large)) / n:+.3f} |")
    task, row, method, phrase = EXAMPLE
    print(f"\nAn example of restating: \"{phrase}\" occurs {texts[(task, method, row)].count(phrase)} times in "
          f"{method}'s answer to {row} and {texts[(task, 'base', row)].count(phrase)} times in the base's.")


if __name__ == "__main__":
    main()
