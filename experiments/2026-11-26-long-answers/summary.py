"""The tables of this folder's README from its raw results: the dev evals at 256 new tokens and all 541 IFEval prompts
(scores, IFEval accuracies, quality bands) and the speed runs, with the tables of
experiments/2026-11-26-gpu-verify-fold/summary.py and experiments/2026-11-26-verify-speed/summary.py.

    python experiments/2026-11-26-long-answers/summary.py > experiments/2026-11-26-long-answers/summary.txt
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(folder: str):
    spec = importlib.util.spec_from_file_location(folder, HERE.parent / folder / "summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ifeval_table(folders: list[Path]) -> None:
    print("\n## IFEval accuracy (%, a test set: reported, nothing chosen on it)\n")
    print("| eval | method | prompts | tau | prompt strict | prompt loose | inst strict | inst loose |")
    print("|---|---|---|---|---|---|---|---|")
    for folder in folders:
        for s in json.loads((folder / "summary.json").read_text())["summary"]:
            if s["task"] == "ifeval":
                print(f"| {folder.name} | {s['method']} | {s['examples']} | {s['tau']:.2f} | "
                      f"{100 * s['prompt_strict']:.1f} | {100 * s['prompt_loose']:.1f} | {100 * s['inst_strict']:.1f} | "
                      f"{100 * s['inst_loose']:.1f} |")


def main() -> None:
    gpu_verify_fold, verify_speed = _load("2026-11-26-gpu-verify-fold"), _load("2026-11-26-verify-speed")
    folders = [f for f in sorted(HERE.glob("eval-*/")) if (f / "summary.json").exists()]
    gpu_verify_fold.scores_table(folders)
    ifeval_table(folders)
    verify_speed.bands_table(folders)
    verify_speed.speed_section(HERE)


if __name__ == "__main__":
    main()
