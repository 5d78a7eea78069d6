"""The A/B table of this experiment's README: for each arm's committed metrics (metrics_ARM.jsonl), the eval lines
(the CPU line's 60 eval rows; step 0: the warm start, from evaluate.sh) with token accuracy, the skip path (micro index 0), micro 2-4, KL and the hidden term,
and the training speed (median response tok/s of the train lines).

    python experiments/2026-11-25-hidden-match/summary.py > experiments/2026-11-25-hidden-match/summary.txt
"""

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
start = {"step": 0, **json.loads((HERE / "layer_profile_warm_start.json").read_text())["eval"]}  # (evaluate.sh)
print("Eval lines of each arm (60 rows)")
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

print()
print("End points (evaluate.sh): skip path split (accuracy / base NLL of the choice / share the base gives < 1%)")
print("model       merged               single               micro_2              hidden")
for name in ("warm_start", "control", "hidden20", "hidden100"):
    split = json.loads((HERE / f"skip_path_split_{name}.json").read_text())["split"]
    profile = json.loads((HERE / f"layer_profile_{name}.json").read_text())
    cells = [f"{100 * split[k]['accuracy']:5.2f} / {split[k]['base_nll']:.3f} / {100 * split[k]['implausible']:4.1f}"
             for k in ("merged", "single", "micro_2")]
    print(f"{name:11s} " + "  ".join(f"{c:19s}" for c in cells) + f"  {profile['hidden']:.4f}")
