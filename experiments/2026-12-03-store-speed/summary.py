"""The rule's figures from `sim.jsonl` (README.md): median wall time over the repetitions per code version, batch size
and mode; verify_fold's speed against verify's; and how many greedy answers the new code writes as the old one did.

    python experiments/2026-12-03-store-speed/summary.py > experiments/2026-12-03-store-speed/summary.txt
    python experiments/2026-12-03-store-speed/summary.py sim-2 > experiments/2026-12-03-store-speed/summary-2.txt
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    records = {}
    for line in (HERE / f"{sys.argv[1] if len(sys.argv) > 1 else 'sim'}.jsonl").read_text().splitlines():
        r = json.loads(line)
        records[r["label"], r["rep"], r["batch"], r["mode"]] = r  # (a resumed run's last record counts)
    labels = sorted({k[0] for k in records}, reverse=True)  # new, old
    batches, modes = sorted({k[2] for k in records}), ("verify", "verify_fold")
    wall = {(label, b, m): statistics.median(r["wall_s"] for k, r in records.items() if k[0] == label and k[2:] ==
                                             (b, m)) for label in labels for b in batches for m in modes}
    reps = {(label, b, m): sorted(r["wall_s"] for k, r in records.items() if k[0] == label and k[2:] == (b, m))
            for label in labels for b in batches for m in modes}
    print("Median wall seconds over repetitions (all repetitions in brackets); 16 dev prompts, 128 tokens, greedy\n")
    print("| batch | mode | old | new | new speed / old |")
    print("|---|---|---|---|---|")
    for b in batches:
        for m in modes:
            print(f"| {b} | {m} | {wall['old', b, m]:.1f} {reps['old', b, m]} | {wall['new', b, m]:.1f} "
                  f"{reps['new', b, m]} | {wall['old', b, m] / wall['new', b, m]:.3f}x |")
    print("\nverify_fold's speed against verify's (median walls):\n")
    for label in labels:
        print(f"- {label}: " + ", ".join(f"batch {b} {wall[label, b, 'verify'] / wall[label, b, 'verify_fold']:.3f}x"
                                         for b in batches))
    tokens = {k: r["tokens"] for k, r in records.items()}
    print(f"\ntokens per run: {sorted(set(tokens.values()))}; tau: "
          + ", ".join(f"{label} b{b} {m} {records[label, 1, b, m]['tau']}" for label in labels for b in batches
                      for m in modes))
    print("\nGreedy answers the new code writes exactly as the old one (repetition 1):\n")
    for b in batches:
        for m in modes:
            old, new = (records[label, 1, b, m]["answers"] for label in ("old", "new"))
            same = sum(a == c for a, c in zip(old, new))
            where = [next((i for i, (x, y) in enumerate(zip(a, c)) if x != y), min(len(a), len(c)))
                     for a, c in zip(old, new) if a != c]
            print(f"- batch {b}, {m}: {same} of {len(old)}" + (f" (first differing token at {where})" if where else ""))
    stable = all(records[label, rep, b, m]["answers"] == records[label, 1, b, m]["answers"]
                 for label, rep, b, m in records)
    print(f"\nEvery repetition of a (code, batch, mode) writes the same answers: {stable}")


if __name__ == "__main__":
    main()
