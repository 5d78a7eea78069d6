"""The tables of this folder's README (or of the folder given) from its raw results: the dev evals (scores, quality
bands), with the tables of experiments/2026-11-26-gpu-verify-fold/summary.py and
experiments/2026-11-26-verify-speed/summary.py, and the speed runs when present.

    python experiments/2026-11-26-growing-window/summary.py > experiments/2026-11-26-growing-window/summary.txt
    python experiments/2026-11-26-growing-window/summary.py experiments/2026-11-26-long-math-60 \
        > experiments/2026-11-26-long-math-60/summary.txt
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("long_answers", HERE.parent / "2026-11-26-long-answers" / "summary.py")
long_answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(long_answers)


if __name__ == "__main__":
    where = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
    folders = [f for f in sorted(where.glob("eval-*/")) if (f / "summary.json").exists()]
    long_answers._load("2026-11-26-gpu-verify-fold").scores_table(folders)
    verify_speed = long_answers._load("2026-11-26-verify-speed")
    verify_speed.bands_table(folders)
    if list(where.glob("speed_*.json")):
        verify_speed.speed_section(where)
