"""The README's tables: each arm's training (tokens, held-out KL and agreement with the base's greedy answer at each
evaluation, from its metrics.jsonl) and the teacher-forced reading of the 80 fixed dev answers (read.sh's JSON) at the
default fold and with nothing folded, per answer set, beside the shipped model's.

    python experiments/2026-11-27-keep-fold-full/summary.py > experiments/2026-11-27-keep-fold-full/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARMS = ("full", "lora", "lora-more", "after-fold")
JUDGED = ("lora", 85)  # the arm and step whose export read.sh and the decode judged (its run went on to 140)
READINGS = ("default", "lora", "warm-all", "warm-after")  # (session 41: the warm start at every slot, after_fold)
POLICIES = {"segments:100000": "nothing folded", "segments:60:0.45:first:steps=8:p=0.7": "the default fold"}


def training(arm: str) -> str:
    lines = [json.loads(line) for line in (HERE / arm / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in lines if m["kind"] == "train"]
    evals = " ; ".join(f"step {m['step']}: KL {m['kl']:.4f}, agreement {100 * m['token_acc']:.1f}%"
                       for m in lines if m["kind"] == "eval")
    return (f"| {arm} | {len(steps)} | {sum(m['tokens'] for m in steps) / 1e3:.0f}k | "
            f"{sum(m['tokens'] for m in steps) / sum(m['tokens'] / m['tok_s'] for m in steps):.0f} | {evals} |")


def reading_rows(name: str) -> list[str]:
    data, out = json.loads((HERE / f"reading-keep-{name}.json").read_text()), []
    for policy, label in POLICIES.items():
        for answers, s in data[policy].items():
            n, gap = s["positions"], s["sampled_nll"] - s["base_sampled_nll"]
            out.append(f"| {name} | {label} | {answers} | {100 * s['flips'] / n:.2f} | {s['spikes']} | "
                       f"{s['kl'] / n:.4f} | {s['rkl'] / n:.4f} | {gap / n:+.4f} | {s['sampled_spikes']:.1f} "
                       f"({s['base_sampled_spikes']:.1f}) | {s['slots'] / s['tokens']:.3f} |")
    return out


def main() -> None:
    print("## Training (held-out: the 53 long val rows, every answer token; KL = the training's half-reversed KL)\n")
    print("| arm | steps | response tokens | tokens/s | held-out evaluations |\n|---|---|---|---|---|")
    for arm in ARMS:
        print(training(arm))
    arm, step = JUDGED
    lines = [json.loads(line) for line in (HERE / arm / "metrics.jsonl").read_text().splitlines()]
    tokens = sum(m["tokens"] for m in lines if m["kind"] == "train" and m["step"] <= step)
    minutes = (next(m["time"] for m in lines if m["kind"] == "train" and m["step"] == step) - lines[0]["time"]) / 60
    print(f"\nJudged (read.sh, the decode): {arm} at step {step}, {tokens / 1e3:.0f}k response tokens, {minutes:.0f} "
          "minutes after its start (evaluations included)")
    print("\n## Teacher-forced reading of the 80 fixed 256-token dev answers (reading.py)\n")
    print("| model | fold | answers | flip % | spikes > 6 nats | KL | reverse KL | sampled NLL gap | "
          "sampled spikes (base's) | answers' KV |\n|---|---|---|---|---|---|---|---|---|---|")
    for name in READINGS:
        print("\n".join(reading_rows(name)))


if __name__ == "__main__":
    main()
