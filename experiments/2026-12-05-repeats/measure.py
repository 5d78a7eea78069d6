"""The shipped model's teacher-forced reading of repeats and fresh tokens (README.md, question 2):
    python measure.py --data VAL.jsonl --layout 0 --out RESULT.json     (run.sh runs it from the repository root)

`benchmarks/skip_path_split.py`'s keys, each split into `repeat` and `fresh` tokens
(`plausibility.repeated_ngram_mask`): per key and kind the tokens, `base_top1` and `implausible`; fresh minus repeat
with a 95% interval from bootstrap resamples of the rows. Prints a table; writes every row's counts.
"""
from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

import torch

from benchmarks.skip_path_split import IMPLAUSIBLE_NLL, base_teacher, load_in_layout, skip_keys, teacher_forced
from hamburger.bench.machine import machine_info
from hamburger.eval.plausibility import repeated_ngram_mask
from hamburger.train.batching import load_rows

RATES = ("base_top1", "implausible")
KEYS = ("merged", "tail", "single", "micro_2", "micro_3", "micro_4")


def per_row(model, rows) -> list[dict]:
    """For each row: "key/kind" -> Counter(tokens, base_top1, implausible), kind `repeat` or `fresh`."""
    out = []
    for _, part, packed, res in teacher_forced(model, rows):
        base_logp = base_teacher(model, packed).log_softmax(-1)
        choice_nll = (-base_logp.gather(1, res.predictions[:, None])[:, 0]).tolist()
        top = (res.predictions == base_logp.argmax(-1)).tolist()
        index = res.micro_index.tolist()
        at = 0
        for row in part:
            n = len(row.response_ids)
            assert res.targets[at:at + n].tolist() == row.response_ids, "tokens out of the rows' order"
            keys = iter(k[0] for k in skip_keys(row.groups, model.config.single_tail))
            counts: dict[str, Counter] = {}
            for i, rep in enumerate(repeated_ngram_mask(row.response_ids)):
                j = index[at + i]
                key = next(keys) if j == 0 else f"micro_{j + 1}"
                c = counts.setdefault(f"{key}/{'repeat' if rep else 'fresh'}", Counter())
                c["tokens"] += 1
                c["base_top1"] += top[at + i]
                c["implausible"] += choice_nll[at + i] > IMPLAUSIBLE_NLL
            out.append(counts)
            at += n
    return out


def pooled(rows: list[dict], name: str, rate: str) -> float | None:
    tokens = sum(r[name]["tokens"] for r in rows if name in r)
    return sum(r[name][rate] for r in rows if name in r) / tokens if tokens else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="segmented jsonl (held-out rows)")
    parser.add_argument("--model", default="hamburger/default_model")
    parser.add_argument("--layout", default=None, help="0, 1, 1f, 1f2 (default: the checkpoint's own)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_in_layout(args.model, args.layout)
    rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, model.base.get_input_embeddings().num_embeddings)
    counts = per_row(model, rows)
    rng = random.Random(0)
    draws = [[counts[rng.randrange(len(counts))] for _ in counts] for _ in range(args.resamples)]
    table = {}
    print(f"{len(rows)} rows, layout {args.layout or 'own'}\n")
    print("| key | tokens fresh / repeat | base_top1 fresh | repeat | fresh - repeat [95%] "
          "| implausible fresh | repeat |")
    print("|---|---|---|---|---|---|---|")
    for key in KEYS:
        f, r = f"{key}/fresh", f"{key}/repeat"
        if pooled(counts, f, "base_top1") is None or pooled(counts, r, "base_top1") is None:
            continue
        entry = {kind: {"tokens": sum(c[name]["tokens"] for c in counts if name in c),
                        **{rate: pooled(counts, name, rate) for rate in RATES}}
                 for kind, name in (("fresh", f), ("repeat", r))}
        diffs = sorted(d for d in (
            (lambda a, b: a - b if a is not None and b is not None else None)(
                pooled(draw, f, "base_top1"), pooled(draw, r, "base_top1")) for draw in draws) if d is not None)
        diff = entry["fresh"]["base_top1"] - entry["repeat"]["base_top1"]
        entry["fresh_minus_repeat"] = {"base_top1": diff, "interval": [diffs[int(0.025 * len(diffs))],
                                                                       diffs[int(0.975 * len(diffs)) - 1]]}
        table[key] = entry
        lo, hi = entry["fresh_minus_repeat"]["interval"]
        print(f"| {key} | {entry['fresh']['tokens']:,} / {entry['repeat']['tokens']:,} "
              f"| {entry['fresh']['base_top1']:.1%} | {entry['repeat']['base_top1']:.1%} "
              f"| {100 * diff:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] "
              f"| {entry['fresh']['implausible']:.1%} | {entry['repeat']['implausible']:.1%} |")
    result = {"model": args.model, "data": args.data, "layout": args.layout, "rows": len(rows), "table": table,
              "per_row": [{k: dict(v) for k, v in c.items()} for c in counts],
              "machine": machine_info(args.threads, "fp32")}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
