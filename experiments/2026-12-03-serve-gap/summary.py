"""Stage 1's table (README.md): median wall seconds of each way at each batch size over the repetitions, each way
against the one before it, CPU use, steal, and whether the answers agree.

    python summary.py > summary.txt                   # stage 1: probe.jsonl
    python summary.py release > summary-release.txt   # stage 1b: release.jsonl (answers checked against stage 1's)
    python summary.py ab > summary-ab.txt             # stage 1c: ab.jsonl (labels keep and release)
    python summary.py stage5 > summary-stage5.txt     # stage 5: stage5.jsonl (labels: the modes)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ("engine", "thread", "scheduler", "server")


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "probe"
    runs = [json.loads(line) for line in (HERE / f"{name}.jsonl").read_text().splitlines()]
    labels = sorted({r["label"] for r in runs})
    print("Median wall seconds over repetitions (all in brackets); 16 dev prompts, 128 tokens, greedy lossless "
          "verify" + (" (label) and verify_fold" if name == "stage5" else "") + "\n")
    print("| label | batch | way | wall s | vs the way before | cores busy (CPU s / wall s) | steal s |")
    print("|---|---|---|---|---|---|---|")
    for label in labels:
        for batch in sorted({r["batch"] for r in runs}):
            before = None
            for how in ORDER:
                mine = [r for r in runs if (r["label"], r["batch"], r["how"]) == (label, batch, how)]
                if not mine:
                    continue
                walls = [r["wall_s"] for r in sorted(mine, key=lambda r: r["rep"])]
                wall = statistics.median(walls)
                busy = statistics.median((r["cpu_s"] + r.get("server_cpu_s", 0.0)) / r["wall_s"] for r in mine)
                ratio = f"{wall / before:.3f}x" if before else ""
                steal = max(r["steal_s"] for r in mine)
                print(f"| {label or '-'} | {batch} | {how} | {wall:.1f} {walls} | {ratio} | {busy:.2f} | "
                      f"max {steal} |")
                before = wall
    if len(labels) == 2:  # stage 1c: the second label's median wall against the first's, way by way
        print()
        for batch in sorted({r["batch"] for r in runs}):
            for how in ORDER:
                walls = [[r["wall_s"] for r in runs if (r["label"], r["batch"], r["how"]) == (label, batch, how)]
                         for label in labels]
                if all(walls):
                    print(f"batch {batch}, {how}: {labels[1]} / {labels[0]} median wall "
                          f"{statistics.median(walls[1]) / statistics.median(walls[0]):.3f}x")
    print("\nTokens per run:", sorted({r["tokens"] for r in runs}))
    if name != "probe":  # stage 1's runs are the reference
        runs += [json.loads(line) for line in (HERE / "probe.jsonl").read_text().splitlines()]
    ids = {json.dumps(r["answers"]) for r in runs if r["how"] != "server"}
    texts = {json.dumps(r["answers"]) for r in runs if r["how"] == "server"}
    print("Distinct answer sets (with probe.jsonl's): in-process token ids", len(ids), "| server texts", len(texts))


if __name__ == "__main__":
    main()
