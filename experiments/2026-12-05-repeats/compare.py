"""Two `measure.py` results on the same rows, paired row by row (README.md, stage 2):
    python compare.py A.json B.json        A minus B per key and kind, with a 95% bootstrap interval over the rows
"""
from __future__ import annotations

import json
import random
import sys

from measure import KEYS, pooled

if __name__ == "__main__":
    a, b = (json.load(open(path)) for path in sys.argv[1:3])
    assert a["data"] == b["data"] and a["rows"] == b["rows"] and a["layout"] == b["layout"], "not the same rows"
    pairs = list(zip(a["per_row"], b["per_row"]))
    rng = random.Random(0)
    draws = [[pairs[rng.randrange(len(pairs))] for _ in pairs] for _ in range(2000)]
    print(f"{a['model']} minus {b['model']}, layout {a['layout']}, {a['rows']} rows: base_top1 in points\n")
    print("| key | kind | tokens | A | B | A - B [95%] |")
    print("|---|---|---|---|---|---|")
    for key in KEYS:
        for kind in ("fresh", "repeat"):
            name = f"{key}/{kind}"
            va, vb = (pooled([p[i] for p in pairs], name, "base_top1") for i in (0, 1))
            if va is None or vb is None:
                continue
            diffs = sorted(pooled([p[0] for p in d], name, "base_top1") - pooled([p[1] for p in d], name, "base_top1")
                           for d in draws)
            tokens = sum(r[name]["tokens"] for r in a["per_row"] if name in r)
            print(f"| {key} | {kind} | {tokens:,} | {100 * va:.1f} | {100 * vb:.1f} | {100 * (va - vb):+.1f} "
                  f"[{100 * diffs[50]:+.1f}, {100 * diffs[1949]:+.1f}] |")
