"""Whether the entropies committed in data/segmented (1,951 greedy rows, made in an early session) are what today's
`hamburger segment` computes, so the CPU's file of every greedy row can begin from them: ROWS rows drawn at random
(seed 0), their entropies recomputed by `segment.compute_entropies` on the fp32 base and rounded as `segment` stores
them, against the committed ones, and their groups (decreasing_v2, 4 steps: the committed cut). Stop other torch jobs.

    python experiments/2026-12-07-cpu-segment/same_entropies.py > experiments/2026-12-07-cpu-segment/same-entropies.txt
"""

from __future__ import annotations

import argparse
import random

import torch

import hamburger  # noqa: F401  (its MKL setting)
from hamburger.core.base import load_base
from hamburger.data.io import read_jsonl
from hamburger.data.segment import SegmentSettings, compute_entropies, segment_entropies

COMMITTED = "data/segmented/smollm2-135m-instruct.train.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=24, help="rows to recompute")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = random.Random(0).sample(read_jsonl(COMMITTED), args.rows)
    model, tokenizer, _ = load_base(None, "float32")
    fresh = compute_entropies(model, tokenizer, [(r["prompt_ids"], r["response_ids"]) for r in rows], batch_size=8)
    settings = SegmentSettings("decreasing_v2", 4)
    vocab = model.get_output_embeddings().weight.shape[0]
    largest, other_groups, tokens = 0.0, 0, 0
    for row, (entropies, _) in zip(rows, fresh):
        rounded = [round(e, 4) for e in entropies]
        largest = max(largest, max(abs(a - b) for a, b in zip(rounded, row["entropies"])))
        other_groups += segment_entropies(rounded, settings, vocab) != row["groups"]
        tokens += len(rounded)
    print(f"{args.rows} committed rows ({tokens} response tokens) recomputed in fp32, torch {torch.__version__}: "
          f"largest entropy difference {largest:.4g} nats; rows whose groups differ: {other_groups}")


if __name__ == "__main__":
    main()
