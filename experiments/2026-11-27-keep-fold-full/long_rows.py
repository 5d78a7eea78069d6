"""Rows of a segmented dataset whose responses hold at least N tokens (with its meta sidecar): the rows where the
default fold (60 answer tokens, or 45% of them) folds anything, so that a short CPU run spends its steps there.

    python experiments/2026-11-27-keep-fold-full/long_rows.py IN.jsonl OUT.jsonl [--min-tokens 100]
"""

import argparse
import json
import shutil

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("data", help="segmented dataset (.jsonl with a .meta.json beside it)")
parser.add_argument("out", help="dataset to write (.jsonl + .meta.json)")
parser.add_argument("--min-tokens", type=int, default=100, help="keep rows with at least this many response tokens")
args = parser.parse_args()
kept = 0
with open(args.data) as src, open(args.out, "w") as dst:
    for line in src:
        if len(json.loads(line)["response_ids"]) >= args.min_tokens:
            dst.write(line)
            kept += 1
shutil.copy(args.data + ".meta.json", args.out + ".meta.json")
print(f"{kept} rows with >= {args.min_tokens} response tokens -> {args.out}")
