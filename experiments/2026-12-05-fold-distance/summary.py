"""The fold-distance curve of README.md: each arm's GSM8K bands at knob 0.9 and its rep4 minus fold-tail 2's, paired
per prompt, with the two endpoints session 63 measured on the same prompts; then, per arm, how many answers are the
base's greedy text and how many KV slots an answer's cache saved on average:
    ../../.venv/bin/python summary.py > summary.md
Later runs judged the same way (`../2026-12-05-cpu-lora-fold/run.sh judge`) add arms: summary.py NAME=FOLDER ...
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EARLIER = HERE.parent / "2026-12-03-default-knob-fold"
sys.path.insert(0, str(EARLIER))
from side_by_side import METRICS, cell, mean_difference, per_prompt, read  # noqa: E402

KNOB = 0.9
ARMS = {"fold-tail 2 (session 63)": EARLIER / "calibration", "fold-tail 4": HERE / "fold-4",
        "fold-tail 8": HERE / "fold-8", "fold-tail 0 (never folds)": HERE / "fold-0",
        "single-tail 3, no merged slot (session 63)": EARLIER / "single-tail"}
REFERENCE = "fold-tail 2 (session 63)"


def main() -> None:
    reference = per_prompt(ARMS[REFERENCE])["gsm8k", KNOB, "rep4"]
    print(f"GSM8K, 120 dev prompts, knob {KNOB:g}, 96 tokens; diff = arm minus the band's reference, paired bootstrap "
          "95% intervals over prompts; **out**: the point estimate is outside the band.\n")
    print("| arm | tau | KV (whole cache) | " + " | ".join(f"{m} (band)" for m in METRICS)
          + f" | rep4 minus {REFERENCE}, paired |")
    print("|---|---|---|" + "---|" * len(METRICS) + "---|")
    for name, folder in ARMS.items():
        if not (folder / "summary.json").is_file():
            print(f"| {name} | not run |" + " |" * (len(METRICS) + 2))
            continue
        bands, rows = read(folder)
        row = rows["gsm8k", KNOB]
        d, lo, hi, n = mean_difference(per_prompt(folder)["gsm8k", KNOB, "rep4"], reference)
        print(f"| {name} | {row['tau']:.2f} | {row.get('kv_share', float('nan')):.3f} | "
              + " | ".join(cell(bands["gsm8k", KNOB, m]) for m in METRICS)
              + f" | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] (n {n}) |")
    identical_answers()


def identical_answers() -> None:
    print()
    for name, folder in ARMS.items():
        if not (folder / "examples.jsonl").is_file():
            continue
        rows = [json.loads(line) for line in (folder / "examples.jsonl").read_text().splitlines()]
        rows = [r for r in rows if r["task"] == "gsm8k"]
        base = {r["id"]: r["text"] for r in rows if r["method"] == "base"}
        arm = [r for r in rows if r["method"] == f"hamburger@{KNOB:g}"]
        same = sum(r["text"] == base[r["id"]] for r in arm)
        saved = sum(r["kv_slots_ordinary"] - r["kv_slots"] for r in arm) / len(arm)
        print(f"- {name}: {same} of {len(arm)} answers are the base's greedy text; {saved:.2f} KV slots saved per answer")


if __name__ == "__main__":
    ARMS.update((name, Path(folder)) for name, folder in (arg.split("=", 1) for arg in sys.argv[1:]))
    main()
