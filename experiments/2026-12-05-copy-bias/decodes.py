"""The decode tests' tau, KV and slots saved at three decimals, beside the shipped weights' judge (README.md):
    ../../.venv/bin/python decodes.py > decodes.md
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "2026-12-03-default-knob-fold" / "calibration"
METHOD = "hamburger@0.9"


def row(folder: Path) -> str:
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    s = next(r for r in summary if r["task"] == "gsm8k" and r["method"] == METHOD)
    answers = [json.loads(x) for x in (folder / "examples.jsonl").open()]
    mine = [a for a in answers if a["task"] == "gsm8k" and a["method"] == METHOD]
    saved = sum(a["kv_slots_ordinary"] - a["kv_slots"] for a in mine) / len(mine)
    tokens = sum(a["tokens"] for a in mine) / len(mine)
    return f"| {folder.name} | {len(mine)} | {s['tau']:.3f} | {s['kv_share']:.3f} | {saved:.2f} | {tokens:.1f} |"


if __name__ == "__main__":
    print(f"GSM8K dev prompts, {METHOD}, 96 tokens: tau, KV share of the whole cache, KV slots saved per answer and "
          "tokens per answer.\n")
    print("| judge | answers | tau | KV | slots saved | tokens |\n|---|---|---|---|---|---|")
    for folder in [SHIPPED] + sorted(f for f in HERE.glob("judge-*") if f.is_dir()):
        print(row(folder))
