"""The two layouts' differences from the base, band by band, the folding layout minus the paper's on each prompt,
and the folding layout's curve over every knob decoded.

Reads calibration/ (`run.sh`: the folding single tail), paper-layout/ (`run_paper_layout.sh`: the shipped config) and
low-knobs/ (`run_low_knobs.sh`: the folding layout below 0.9), which decoded the same dev prompts (the base's answers
seeded), and prints two Markdown tables and, per knob of the folding layout, how many answers repeat more (rep4) than
the base's greedy answer to the same prompt (README.md):
    ../../.venv/bin/python side_by_side.py > side_by_side.md
"""
from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAYOUTS = {"fold": HERE / "calibration", "paper": HERE / "paper-layout"}
CURVE = (HERE / "low-knobs", HERE / "calibration")
METRICS = ("nll_per_token", "worst_token_nll", "rep4")
RESAMPLES, SEED = 2000, 0


def read(folder: Path) -> tuple[dict, dict]:
    summary = json.loads((folder / "summary.json").read_text())
    bands = {(c["task"], c["confidence"], c["band"]["metric"]): c for c in summary["comparisons"]}
    rows = {(s["task"], s["confidence"]): s for s in summary["summary"] if s["method"].startswith("hamburger@")}
    return bands, rows


def per_prompt(folder: Path) -> dict:
    """(task, knob, metric) -> prompt id -> value, for the HAMburger methods."""
    values: dict = {}
    for line in (folder / "examples.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["method"].startswith("hamburger@"):
            for m in METRICS:
                values.setdefault((r["task"], r["confidence"], m), {})[r["id"]] = r[m]
    return values


def mean_difference(a: dict, b: dict) -> tuple[float, float, float, int]:
    """Mean over the prompts both hold of a - b, and its bootstrap 95% interval over prompts."""
    ids = sorted(set(a) & set(b))
    diffs = [a[i] - b[i] for i in ids]
    rng = random.Random(SEED)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(RESAMPLES))
    return sum(diffs) / len(diffs), means[int(0.025 * RESAMPLES)], means[int(0.975 * RESAMPLES) - 1], len(ids)


def cell(c: dict) -> str:
    return f"{c['diff']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]{'' if c['point_inside'] else ' **out**'}"


def layout_table() -> None:
    (fold, fold_rows), (paper, paper_rows) = (read(f) for f in LAYOUTS.values())
    fold_values, paper_values = per_prompt(LAYOUTS["fold"]), per_prompt(LAYOUTS["paper"])
    print("| task | knob | band | tau fold / paper | fold: diff [95% CI] | paper: diff [95% CI] "
          "| fold - paper, paired [95% CI] | n |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(set(fold) & set(paper)):
        task, knob, metric = key
        d, lo, hi, n = mean_difference(fold_values[key], paper_values[key])
        print(f"| {task} | {knob:g} | {fold[key]['band_text']} | {fold_rows[task, knob]['tau']:.2f} / "
              f"{paper_rows[task, knob]['tau']:.2f} | {cell(fold[key])} | {cell(paper[key])} | "
              f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] | {n} |")


def curve_table() -> None:
    print("| task | knob (folding layout) | tau | KV (whole cache) | " + " | ".join(METRICS) + " |")
    print("|---|---|---|---|" + "---|" * len(METRICS))
    bands, rows = {}, {}
    for folder in CURVE:
        b, r = read(folder)
        bands.update(b)
        rows.update(r)
    for task, knob in sorted(rows):
        cells = [cell(bands[task, knob, m]) if (task, knob, m) in bands else "" for m in METRICS]
        print(f"| {task} | {knob:g} | {rows[task, knob]['tau']:.2f} | "
              f"{rows[task, knob].get('kv_share', float('nan')):.3f} | " + " | ".join(cells) + " |")


def repetition_counts() -> None:
    for folder in CURVE:
        records = map(json.loads, (folder / "examples.jsonl").read_text().splitlines())
        rep = {(r["task"], r["method"], r["id"]): r["rep4"] for r in records}
        for task, method in sorted({(t, m) for t, m, _ in rep if m.startswith("hamburger@")}):
            ids = [i for t, m, i in rep if (t, m) == (task, method)]
            more = sum(rep[task, method, i] > rep[task, "base", i] for i in ids)
            less = sum(rep[task, method, i] < rep[task, "base", i] for i in ids)
            print(f"- {task} {method} (folding layout): rep4 above the base's greedy answer in {more} of {len(ids)}, "
                  f"below in {less}")


def main() -> None:
    layout_table()
    print()
    curve_table()
    print()
    repetition_counts()

if __name__ == "__main__":
    main()
