"""The tables of this folder's README from its raw results: the dev evals at 256 new tokens (scores, quality bands),
with the tables of experiments/2026-11-26-gpu-verify-fold/summary.py and experiments/2026-11-26-verify-speed/summary.py,
and the speed runs when present.

    python experiments/2026-11-26-growing-window/summary.py > experiments/2026-11-26-growing-window/summary.txt
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("long_answers", HERE.parent / "2026-11-26-long-answers" / "summary.py")
long_answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(long_answers)


if __name__ == "__main__":
    folders = [f for f in sorted(HERE.glob("eval-*/")) if (f / "summary.json").exists()]
    long_answers._load("2026-11-26-gpu-verify-fold").scores_table(folders)
    verify_speed = long_answers._load("2026-11-26-verify-speed")
    verify_speed.bands_table(folders)
    if list(HERE.glob("speed_*.json")):
        verify_speed.speed_section(HERE)
