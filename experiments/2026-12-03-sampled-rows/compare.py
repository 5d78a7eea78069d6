"""Models against each other on the same rows: `measure.py` results, paired by prompt (README.md, stage 2).

    python compare.py SHIPPED.json A.json B.json

For each pair (B - A, A - shipped, B - shipped), each set (greedy, sampled) and key: the difference of the pooled
rate, with a 95% interval from 2000 bootstrap resamples of the prompts (every model's counts of a prompt together).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from measure import KEYS, paired_difference

RATES = ("base_top1", "base_nll", "implausible")


def main() -> None:
    names = [Path(p).stem for p in sys.argv[1:4]]
    runs = [json.loads(Path(p).read_text()) for p in sys.argv[1:4]]
    shipped, a, b = names
    prompts = sorted(set.intersection(*(set(r["rows"][s]) for r in runs for s in ("greedy", "sampled"))))
    rng = random.Random(0)
    draws = [[rng.choice(prompts) for _ in prompts] for _ in range(2000)]
    models = ", ".join(f"{n} ({r['model']})" for n, r in zip(names, runs))
    print(f"{len(prompts)} prompts; models: {models}")
    for (x, y) in ((b, a), (a, shipped), (b, shipped)):
        rx, ry = runs[names.index(x)]["rows"], runs[names.index(y)]["rows"]
        print(f"\n{x} - {y}")
        print(f"{'set':8} {'key':9} {'rate':12} {y:>15} {x:>15} {'diff':>8}  95% interval")
        for s in ("greedy", "sampled"):
            for key in KEYS[1:]:
                for rate in RATES:
                    vx, vy, lo, hi = paired_difference(rx[s], ry[s], prompts, draws, key, rate)
                    print(f"{s:8} {key:9} {rate:12} {vy:15.4f} {vx:15.4f} {vx - vy:+8.4f}  [{lo:+.4f}, {hi:+.4f}]")


if __name__ == "__main__":
    main()
