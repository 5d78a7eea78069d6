"""The tables of this folder's README from its raw results: scores, tau and the quality bands of the sampled runs
(`run.sh`), beside the greedy verify_fold runs of the default folding on the same prompts
(experiments/2026-11-26-fold-keep/), with the tables of experiments/2026-11-26-long-answers/summary.py.

    python experiments/2026-11-26-sampled-fold/summary.py > experiments/2026-11-26-sampled-fold/summary.txt
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
GREEDY = [HERE.parent / "2026-11-26-fold-keep" / f"eval-dev-default-segments-60-first-steps=8-p=0.7-c0.3-p10{s}"
          for s in ("-l120", "-t256-gsm8k-l60", "-t256-chat")]  # the greedy runs of the default folding


def main() -> None:
    path = HERE.parent / "2026-11-26-long-answers" / "summary.py"
    spec = importlib.util.spec_from_file_location("long_answers", path)
    long_answers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(long_answers)
    folders = [f for f in sorted(HERE.glob("eval-*/")) if (f / "summary.json").exists()]
    long_answers._load("2026-11-26-gpu-verify-fold").scores_table(folders + GREEDY)
    long_answers.ifeval_table(folders)
    long_answers._load("2026-11-26-verify-speed").bands_table(folders)


if __name__ == "__main__":
    main()
