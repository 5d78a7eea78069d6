"""Each run's validation lines (and their change from first to last), response tokens and wall time from its
committed metrics (`metrics*/metrics.jsonl`), and how many of the committed sampled answers belong to validation
prompts (session 65):
    ../../.venv/bin/python curves.py > curves.md
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from hamburger.data.dataset import is_val_row  # noqa: E402

SAMPLED = ROOT / "data/distilled/smollm2-135m-instruct.train-s1.jsonl.gz"


def main() -> None:
    print("| run | step | token accuracy | micro 1 (skip path) / 2 / 3 / 4 | KL to the base |")
    print("|---|---|---|---|---|")
    totals, changes, gentle_line = [], [], 0
    for folder in sorted(HERE.glob("metrics*")):
        records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        for r in (r for r in records if r["kind"] == "eval"):
            micro = " / ".join(f"{100 * a:.1f}" for a in r["token_acc_micro"])
            print(f"| {folder.name} | {r['step']} | {100 * r['token_acc']:.1f}% | {micro}% | {r['kl']:.3f} |")
        evals = [r for r in records if r["kind"] == "eval"]
        if len(evals) > 1:  # the run's change from its first to its last validation line, in points / nats
            first, last = evals[0], evals[-1]
            pairs = zip(first["token_acc_micro"], last["token_acc_micro"])
            micro = " / ".join(f"{100 * (b - a):+.1f}" for a, b in pairs)
            changes.append(f"- {folder.name}, step {first['step']} -> {last['step']}: token accuracy "
                           f"{100 * (last['token_acc'] - first['token_acc']):+.1f}, micro {micro}, "
                           f"KL {last['kl'] - first['kl']:+.3f}")
        train = [r for r in records if r["kind"] == "train"]
        minutes = (records[-1]["time"] - records[0]["time"]) / 60
        if folder.name.startswith("metrics-gentle"):  # the gentle line's epochs, one after another
            gentle_line += sum(r["response_tokens"] for r in train)
        totals.append(f"- {folder.name}: {train[-1]['step']} steps logged, {sum(r['response_tokens'] for r in train):,} "
                      f"response tokens, {minutes:.1f} min from its first to its last line")
    print("\n" + "\n".join(changes))
    print("\n" + "\n".join(totals))
    print(f"- the gentle line (gentle, gentle2, gentle3): {gentle_line:,} response tokens")
    with gzip.open(SAMPLED, "rt") as f:
        ids = [json.loads(line)["id"] for line in f]
    print(f"- {SAMPLED.name}: {sum(map(is_val_row, ids))} of {len(ids):,} rows belong to validation prompts")


if __name__ == "__main__":
    main()
