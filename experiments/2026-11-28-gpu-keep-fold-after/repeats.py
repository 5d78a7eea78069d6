"""Repetition on dev rows 240-359 (step 2's runs), as ../2026-11-28-full-heads/repeats.py counts it on rows 120-239:
mean rep4 and answers repeating more than half their 4-grams, per decoding, for the shipped model and fh4.

    E=experiments/2026-11-28-gpu-keep-fold-after; python $E/repeats.py > $E/repeats.txt
"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = {"af-reader": HERE / "eval-rows240-360-af-reader",
        "fh4": HERE.parent / "2026-11-28-full-heads" / "eval-rows240-360-fh4"}

for arm, run in RUNS.items():
    rows = [json.loads(line) for line in open(run / "examples.jsonl")]
    for method in sorted({r["method"] for r in rows}):
        got = [r for r in rows if r["method"] == method]
        print(f"{arm} run, {method}: {len(got)} answers, rep4 {sum(r['rep4'] for r in got) / len(got):.3f}, "
              f"{sum(r['rep4'] > 0.5 for r in got)} above 0.5")
