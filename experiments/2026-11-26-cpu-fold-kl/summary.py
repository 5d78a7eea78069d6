"""The README's tables: each arm's evals (start, end; verify-fold layout at window 48, 100 val rows) from
ARM/metrics.jsonl (kl2-more: continue.sh, kl2 continued), and the teacher-forced readings of read.sh (reading-*.json:
80 long dev answers, `segments:48:p=0.7`) beside the training-free default fold's
(experiments/2026-11-26-fold-policies/).

    python experiments/2026-11-26-cpu-fold-kl/summary.py > experiments/2026-11-26-cpu-fold-kl/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_FOLD = HERE.parent / "2026-11-26-fold-policies" / "reading-default-keep-60.json"


def main() -> None:
    print("| arm | kl_weight | step | W48 next-token accuracy | W48 KL to the base |")
    print("|---|---|---|---|---|")
    for arm in ("kl2", "kl05", "kl2-more"):
        config = json.loads((HERE / arm / "config.json").read_text())
        for r in map(json.loads, (HERE / arm / "metrics.jsonl").read_text().splitlines()):
            if r.get("kind") == "eval":
                print(f"| {arm} | {config['kl_weight']} | {r['step']} | {100 * r['token_acc']:.1f}% | {r['kl']:.4f} |")
    for arm in ("kl2", "kl05", "kl2-more"):
        rows = [json.loads(line) for line in (HERE / arm / "metrics.jsonl").read_text().splitlines()]
        tokens = sum(r["response_tokens"] for r in rows if r.get("kind") == "train")
        print(f"\n{arm}: {rows[-1]['step']} steps, {tokens:,} response tokens, "
              f"{(rows[-1]['time'] - rows[0]['time']) / 60:.0f} min from its start line to its last line", end="")
    print("\n\n| model | policy | flips % | spikes > 6 nats | KL mean | KV at 128 |")
    print("|---|---|---|---|---|---|")
    readings = [("training-free (any model)", DEFAULT_FOLD)] + [
        (name, HERE / f"reading-{name}.json") for name in ("start", "kl2", "kl05", "kl2-more")]
    for name, path in readings:
        if not path.exists():
            continue
        for policy, stats in json.loads(path.read_text()).items():
            t = {k: sum(s[k] for s in stats.values()) for k in ("positions", "flips", "spikes", "kl", "slots_128",
                                                                   "answers_128")}
            print(f"| {name} | {policy} | {100 * t['flips'] / t['positions']:.2f} | {t['spikes']} | "
                  f"{t['kl'] / t['positions']:.4f} | {t['slots_128'] / (128 * t['answers_128']):.3f} |")


if __name__ == "__main__":
    main()
