"""Each judged checkpoint of this folder paired with the shipped weights in the same layout (session 63's
`calibration/`), per prompt: worst-token NLL and NLL per token under the base, GSM8K, knob 0.9 (added in session 65
after the judges were read; reported only):
    ../../.venv/bin/python paired.py > paired.md
Other judge folders (decoded the same way) as arguments: paired.py FOLDER ... pairs those instead.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "2026-12-03-default-knob-fold"
sys.path.insert(0, str(SHIPPED))
from side_by_side import mean_difference, per_prompt  # noqa: E402

KNOB, METRICS = 0.9, ("worst_token_nll", "nll_per_token", "rep4")

if __name__ == "__main__":
    shipped = per_prompt(SHIPPED / "calibration")
    print(f"GSM8K, 120 dev prompts, knob {KNOB:g}: judged checkpoint minus the shipped weights (same layout), paired "
          "bootstrap 95% intervals over prompts.\n")
    print("| checkpoint | " + " | ".join(METRICS) + " |")
    print("|---|" + "---|" * len(METRICS))
    folders = [Path(f) for f in sys.argv[1:]] or sorted(f for f in HERE.glob("judge-*") if f.is_dir())
    for folder in folders:
        arm = per_prompt(folder)
        cells = ("{:+.3f} [{:+.3f}, {:+.3f}]".format(*mean_difference(arm["gsm8k", KNOB, m],
                                                                    shipped["gsm8k", KNOB, m])[:3]) for m in METRICS)
        print(f"| {folder.name} | " + " | ".join(cells) + " |")
