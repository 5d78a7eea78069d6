"""Repetition of fh4's sampled answers on dev rows 120-239 beside af-reader's and the base's (the README's counts):
mean rep4 and answers repeating more than half their 4-grams, per decoding, and fh4's most repetitive answer's end.

    python experiments/2026-11-28-full-heads/repeats.py > experiments/2026-11-28-full-heads/repeats.txt
"""

import json
from pathlib import Path

DRAWS = Path(__file__).resolve().parent.parent / "2026-11-27-draws"

for arm in ("af-reader", "fh4"):
    rows = [json.loads(line) for line in open(DRAWS / f"eval-rows120-240-{arm}" / "examples.jsonl")]
    for method in sorted({r["method"] for r in rows}):
        got = [r for r in rows if r["method"] == method]
        mean = sum(r["rep4"] for r in got) / len(got)
        print(f"{arm} run, {method}: {len(got)} answers, rep4 {mean:.3f}, "
              f"{sum(r['rep4'] > 0.5 for r in got)} above 0.5")
    if arm == "fh4":
        top = max((r for r in rows if r["method"] == "verify-fold-sampled"), key=lambda r: r["rep4"])
        print(f"fh4's most repetitive answer (rep4 {top['rep4']:.2f}) ends: {top['text'][-120:]!r}")
