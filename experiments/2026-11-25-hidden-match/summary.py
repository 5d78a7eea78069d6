"""The A/B table of this experiment's README: for each arm's committed metrics (metrics_ARM.jsonl), the eval lines
(the CPU line's 60 eval rows) with token accuracy, the skip path (micro index 0), micro 2-4, KL and the hidden term,
and the training speed (median response tok/s of the train lines).

    python experiments/2026-11-25-hidden-match/summary.py > experiments/2026-11-25-hidden-match/summary.txt
"""

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
START = {"step": 0, "token_acc": 0.6164, "token_acc_micro": [0.6757, 0.6057, 0.5472, 0.5391], "kl": 1.3606,
         "hidden": 0.0231}  # the warm start, measured by eval0.py (eval0.json)
start = json.loads((HERE / "eval0.json").read_text()) if (HERE / "eval0.json").exists() else START
print("arm       step  token_acc  skip   micro2  micro3  micro4  KL     hidden  train tok/s")
for path in sorted(HERE.glob("metrics_*.jsonl")):
    arm = path.stem.removeprefix("metrics_")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    train = [r for r in rows if r.get("kind") == "train"]
    speed = statistics.median(r["tok_s"] for r in train) if train else float("nan")
    for r in [start] + [r for r in rows if r.get("kind") == "eval"]:
        m = r["token_acc_micro"]
        hidden = r.get("hidden")
        print(f"{arm:9s} {r['step']:4d}  {100 * r['token_acc']:8.2f}  {100 * m[0]:5.2f}  {100 * m[1]:6.2f}  "
              f"{100 * m[2]:6.2f}  {100 * m[3]:6.2f}  {r['kl']:.3f}  {'' if hidden is None else f'{hidden:.4f}':6s}  "
              f"{speed:.0f}")
