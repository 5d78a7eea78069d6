"""The README's tables: each arm's evals (start, end; verify-fold layout at window 48, 100 val rows) from
ARM/metrics.jsonl beside session 30's kl2 arm (CE + 2 x KL, experiments/2026-11-26-cpu-fold-kl/), and the teacher-forced
readings of read.sh (reading-ARM.json: 80 long dev answers, `segments:48:p=0.7`) beside kl2's and the training-free
default fold's (experiments/2026-11-26-fold-policies/).

    python experiments/2026-11-26-cpu-pure-kl/summary.py > experiments/2026-11-26-cpu-pure-kl/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
KL2 = HERE.parent / "2026-11-26-cpu-fold-kl"
ARMS = {"kl2 (session 30)": KL2 / "kl2", "pure": HERE / "pure", "pure-lr4": HERE / "pure-lr4"}
READINGS = {"training-free default fold (any model)": HERE.parent / "2026-11-26-fold-policies" /
            "reading-default-keep-60.json", "start (lora-verify-fold)": KL2 / "reading-start.json",
            "kl2 (session 30)": KL2 / "reading-kl2.json", "pure": HERE / "reading-pure.json",
            "pure-lr4": HERE / "reading-pure-lr4.json", "pure, windows 52 and 56": HERE / "reading-pure-windows.json"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def main() -> None:
    print("| arm | token_loss_weight | kl_weight | lr_base / lr_grafted | step | W48 next-token accuracy | W48 KL |")
    print("|---|---|---|---|---|---|---|")
    for arm, folder in ARMS.items():
        if not (folder / "metrics.jsonl").exists():
            continue
        c = json.loads((folder / "config.json").read_text())
        for r in lines(folder / "metrics.jsonl"):
            if r.get("kind") == "eval":
                print(f"| {arm} | {c.get('token_loss_weight', 1.0)} | {c['kl_weight']} | {c['lr_base']:g} / "
                      f"{c['lr_grafted']:g} | {r['step']} | {100 * r['token_acc']:.1f}% | {r['kl']:.4f} |")
    for arm, folder in ARMS.items():
        if (folder / "metrics.jsonl").exists():
            rows = lines(folder / "metrics.jsonl")
            tokens = sum(r["response_tokens"] for r in rows if r.get("kind") == "train")
            print(f"\n{arm}: {rows[-1]['step']} steps, {tokens:,} response tokens, "
                  f"{(rows[-1]['time'] - rows[0]['time']) / 60:.0f} min from its start line to its last line", end="")
    print("\n\n| model | policy | flips % | spikes > 6 nats | KL mean | KV at 128 |")
    print("|---|---|---|---|---|---|")
    for name, path in READINGS.items():
        if not path.exists():
            continue
        for policy, stats in json.loads(path.read_text()).items():
            t = {k: sum(s[k] for s in stats.values()) for k in ("positions", "flips", "spikes", "kl", "slots_128",
                                                                   "answers_128")}
            print(f"| {name} | {policy} | {100 * t['flips'] / t['positions']:.2f} | {t['spikes']} | "
                  f"{t['kl'] / t['positions']:.4f} | {t['slots_128'] / (128 * t['answers_128']):.3f} |")


if __name__ == "__main__":
    main()
