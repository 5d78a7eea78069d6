"""The tables of this folder's README from its raw results: the teacher-forced reading of verify-fold's layout
before (the GPU warm start, experiments/2026-11-26-verify-speed/verify_window_reading/) and after the lent GPU's
lora-verify-fold run (verify_window_reading/), the dev evals of both (scores and quality bands), the speed runs and
the CPU run that mixes both layouts (cpu_mixed/, against the warm start's eval in the ordinary layout on the same rows,
experiments/2026-11-25-cpu-single-tail-ab/metrics/control.jsonl at step 0).

    python experiments/2026-11-26-gpu-verify-fold/summary.py > experiments/2026-11-26-gpu-verify-fold/summary.txt
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEFORE = HERE.parent / "2026-11-26-verify-speed"
_spec = importlib.util.spec_from_file_location("verify_speed_summary", BEFORE / "summary.py")
verify_speed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_speed)


SCORE = {"chat": "rouge_l", "gsm8k": "correct", "ifeval": "inst_strict"}


def first_eval(path: Path) -> dict:
    return next(e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == "eval")


def reading_table() -> None:
    print("## Teacher-forced reading of the layout (92 held-out val rows, every token predicted by the base)\n")
    print("| window W | token acc before | after | KL before | after | token loss before | after |")
    print("|---|---|---|---|---|---|---|")
    for after in sorted(HERE.glob("verify_window_reading/*.jsonl"), key=lambda p: int(p.stem)):
        a, b = first_eval(BEFORE / "verify_window_reading" / after.name), first_eval(after)
        print(f"| {after.stem} | {a['token_acc']:.4f} | {b['token_acc']:.4f} | {a['kl']:.4f} | {b['kl']:.4f} | "
              f"{a['token_loss']:.4f} | {b['token_loss']:.4f} |")
    base = first_eval(BEFORE / "verify_window_reading" / "100000.jsonl")
    print(f"| no fold (the base) | {base['token_acc']:.4f} | | {base['kl']:.4f} | | {base['token_loss']:.4f} | |")


def scores_table(folders: list[Path]) -> None:
    print("\n## Scores (chat: ROUGE-L vs the base's greedy answer; GSM8K: correct; IFEval: instructions, strict)\n")
    print("| eval | task | method | score | tau | NLL/token | worst-token NLL | rep4 |")
    print("|---|---|---|---|---|---|---|---|")
    for folder in folders:
        for s in json.loads((folder / "summary.json").read_text())["summary"]:
            score = s[SCORE[s["task"]]]
            print(f"| {folder.parent.name}/{folder.name} | {s['task']} | {s['method']} | {100 * score:.1f} | "
                  f"{s['tau']:.2f} | {s['nll_per_token']:.3f} | {s['worst_token_nll']:.2f} | {s['rep4']:.3f} |")


def mixed_table() -> None:
    path = HERE / "cpu_mixed" / "metrics.jsonl"
    if not path.exists():
        return
    print("\n## CPU, both layouts mixed (`cpu_mixed.sh`), eval on the 92 val rows\n")
    print("| step | ordinary: first-token acc | micro 2/3/4 | KL | stop acc | verify-fold W16: acc | KL |")
    print("|---|---|---|---|---|---|---|")
    control = first_eval(HERE.parent / "2026-11-25-cpu-single-tail-ab" / "metrics" / "control.jsonl")
    window = first_eval(BEFORE / "verify_window_reading" / "16.jsonl")

    def row(name: str, e: dict, w: dict | None) -> None:
        micro = "/".join(f"{100 * m:.1f}" for m in e["token_acc_micro"][1:])
        tail = f"{100 * w['token_acc']:.2f}% | {w['kl']:.3f}" if w else " | "
        print(f"| {name} | {100 * e['token_acc_micro'][0]:.1f}% | {micro} | {e['kl']:.3f} | {e['stop_acc']:.3f} | "
              f"{tail} |")

    row("warm start (before any verify-fold training)", control, window)
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if e["kind"] == "eval":
            row(str(e["step"]), e, e["window"])


def main() -> None:
    reading_table()
    mixed_table()
    folders = [f for f in sorted(HERE.glob("eval-*/")) + sorted(BEFORE.glob("eval-*/")) if f.is_dir()]
    scores_table(folders)
    verify_speed.bands_table(folders)
    verify_speed.speed_section(HERE)


if __name__ == "__main__":
    main()
