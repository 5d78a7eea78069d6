"""The two runs' train-batch accuracies side by side: both runs draw the same batches in the same order (same rows,
seed and plan), so each logged step is a paired comparison on ~14k fresh chain predictions. Means per window of
steps, and the other run minus the control (`--label` names it; experiments/2026-11-25-cpu-grow-msd/ reuses this).

    python experiments/2026-11-25-cpu-msd-context/paired.py CONTROL.jsonl CONTEXT.jsonl [--window 50] [--label context]
"""

import argparse
import json
from pathlib import Path


def train_lines(path: str) -> dict[int, dict]:
    return {r["step"]: r for r in map(json.loads, Path(path).read_text().splitlines()) if r.get("kind") == "train"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("control")
    parser.add_argument("context")
    parser.add_argument("--window", type=int, default=50, help="steps per line")
    parser.add_argument("--label", default="context", help="the second run's name in the table")
    args = parser.parse_args()
    a, b = train_lines(args.control), train_lines(args.context)
    steps = sorted(set(a) & set(b))
    name = args.label
    print(f"| steps | logged steps | control micro 2 / 3 / 4 | {name} micro 2 / 3 / 4 | {name} - control (points) |")
    print("|---|---|---|---|---|")
    for lo in range(0, steps[-1] if steps else 0, args.window):
        part = [s for s in steps if lo < s <= lo + args.window]
        if not part:
            continue

        def mean(run, j):
            return 100 * sum(run[s]["token_acc_micro"][j] for s in part) / len(part)

        ctl, ctx = [mean(a, j) for j in (1, 2, 3)], [mean(b, j) for j in (1, 2, 3)]
        print(f"| {lo + 1}-{lo + args.window} | {len(part)} | {' / '.join(f'{x:.1f}' for x in ctl)} | "
              f"{' / '.join(f'{x:.1f}' for x in ctx)} | {' / '.join(f'{y - x:+.1f}' for x, y in zip(ctl, ctx))} |")


if __name__ == "__main__":
    main()
