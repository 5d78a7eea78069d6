"""Base positions a training step feeds in each layout, on the CPU A/B's train rows (runs/cpu-st/split/train.jsonl,
made by experiments/2026-11-25-cpu-single-tail-ab/run.sh): all of them (prompts included) and the response's slots
only, each as a ratio to the paper's layout. Writes layout_slots.json beside this file.

    .venv/bin/python experiments/2026-11-25-fold-tail/layout_slots.py
"""

import json
from pathlib import Path

from hamburger.core.config import parse_layout
from hamburger.core.packing import layout_slots

HERE = Path(__file__).parent
ROWS = HERE.parents[1] / "runs/cpu-st/split/train.jsonl"


def main() -> None:
    rows = [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]
    totals = {}
    for name in ("0", "1", "1f", "1f2", "1f3"):
        tail, fold = parse_layout(name)
        slots = [layout_slots(len(r["prompt_ids"]), r["groups"], tail, fold) for r in rows]
        totals[name] = {"positions": sum(slots),
                        "response_slots": sum(s - len(r["prompt_ids"]) for s, r in zip(slots, rows))}
    for t in totals.values():
        t["positions_ratio"] = round(t["positions"] / totals["0"]["positions"], 3)
        t["response_ratio"] = round(t["response_slots"] / totals["0"]["response_slots"], 3)
    result = {"rows": len(rows), "data": "runs/cpu-st/split/train.jsonl", "layouts": totals}
    (HERE / "layout_slots.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
