"""Mean tokens per group of each segmentation strategy on a segmented dataset's stored entropies.

No model forward: the entropies stored by `hamburger segment` are re-cut with every strategy. Also
reports the share of tokens whose base next-token probability exceeds 0.9 (another common cut).

    python benchmarks/strategy_stats.py data/segmented/smollm2-135m-instruct.train.jsonl \
        --out benchmarks/results/strategy_stats.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from hamburger.data.dataset import load_dataset
from hamburger.data.segment import SegmentSettings, segment_entropies

VARIANTS = [("decreasing_v2", {}), ("decreasing", {}), ("small_group", {}),
            ("sliding", {"sliding_p": 0.95}), ("sliding", {"sliding_p": 0.9}), ("sliding", {"sliding_p": 0.7})]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset")
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows, meta = load_dataset(args.dataset)
    vocab = meta.get("entropy_vocab_size") or meta["tokenizer"]["vocab_size"]
    tokens = sum(len(r["entropies"]) for r in rows)
    results = []
    for strategy, options in VARIANTS:
        settings = SegmentSettings(strategy=strategy, max_steps=args.max_steps, **options)
        sizes = [g for r in rows for g in segment_entropies(r["entropies"], settings, vocab)]
        hist = Counter(sizes)
        results.append({"strategy": strategy, **options, "tokens_per_group": tokens / len(sizes),
                        "histogram": {k: hist[k] / len(sizes) for k in sorted(hist)}})
        print(f"{strategy:14s} {options or ''}: {tokens / len(sizes):.3f} tokens/group")
    confident = sum(p > 0.9 for r in rows for p in r["token_probs"]) / tokens
    record = {"dataset": Path(args.dataset).name, "rows": len(rows), "response_tokens": tokens,
              "max_steps": args.max_steps, "base": meta.get("base"), "share_of_tokens_with_p_gt_0.9": confident,
              "results": results}
    print(json.dumps({k: v for k, v in record.items() if k != "results"}))
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
