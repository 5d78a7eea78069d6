"""The prompts of a fixed random half of the CPU reader runs' training rows (runs/keep-fold/train-long.jsonl: the CPU
split's training rows whose greedy answers hold >= 100 tokens), for the base to answer sampled.

    python experiments/2026-11-28-sampled-reader/prompts.py runs/keep-fold/train-long.jsonl data/prompts/train-all.jsonl \
        OUT.jsonl [--count 560] [--seed 0]
"""

import argparse
import json
import random

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("rows", help="segmented dataset whose row ids choose the prompts")
parser.add_argument("prompts", help="prompt file holding those ids (`hamburger prompts` output)")
parser.add_argument("out", help="prompt file to write")
parser.add_argument("--count", type=int, default=560, help="prompts to keep (default 560)")
parser.add_argument("--seed", type=int, default=0, help="the shuffle's seed (default 0)")
args = parser.parse_args()
with open(args.rows) as f:
    ids = [json.loads(line)["id"] for line in f]
random.Random(args.seed).shuffle(ids)
chosen = set(ids[:args.count])
with open(args.prompts) as src, open(args.out, "w") as dst:
    kept = [line for line in src if json.loads(line)["id"] in chosen]
    dst.writelines(kept)
print(f"{len(kept)} prompts -> {args.out}")
