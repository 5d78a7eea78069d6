"""The tables of this folder's README from its raw results: the dev evals at 256 new tokens (scores, quality bands),
with the tables of experiments/2026-11-26-gpu-verify-fold/summary.py and experiments/2026-11-26-verify-speed/summary.py,
and the speed runs when present.

    python experiments/2026-11-26-growing-window/summary.py > experiments/2026-11-26-growing-window/summary.txt
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(folder: str):
    spec = importlib.util.spec_from_file_location(folder, HERE.parent / folder / "summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    folders = [f for f in sorted(HERE.glob("eval-*/")) if (f / "summary.json").exists()]
    _load("2026-11-26-gpu-verify-fold").scores_table(folders)
    verify_speed = _load("2026-11-26-verify-speed")
    verify_speed.bands_table(folders)
    if list(HERE.glob("speed_*.json")):
        verify_speed.speed_section(HERE)
