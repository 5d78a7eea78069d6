"""The shipped model's reading of greedy and sampled histories, paired by prompt (README.md: the measurement).

    python measure.py --greedy GREEDY-CUT.jsonl --sampled SAMPLED-CUT.jsonl [--model DIR] [--out RESULTS.json]

Each row alone through `benchmarks/skip_path_split.split_accuracy`; per key the pooled `base_top1`, `accuracy`,
`base_nll` and `implausible` of each set, and greedy minus sampled with a 95% interval from bootstrap resamples of
the prompts (a prompt's two answers stay together). Prints the summary table; writes every row's counts.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch

from benchmarks.skip_path_split import load_in_layout, split_accuracy
from hamburger.bench.machine import machine_info
from hamburger.data.dataset import prompt_id
from hamburger.data.io import read_jsonl
from hamburger.train.batching import load_rows

RATES = ("base_top1", "accuracy", "base_nll", "implausible")
KEYS = ("prompt", "merged", "single", "micro_2", "micro_3", "micro_4")


def per_row(model, tokenizer, path: str) -> dict[str, dict]:
    """Prompt id -> key -> {"tokens", and each rate's sum over the row's tokens}."""
    vocab = model.base.get_input_embeddings().num_embeddings
    rows, _ = load_rows(path, tokenizer, model.config.max_steps, vocab)
    ids = [prompt_id(r["id"]) for r in read_jsonl(path)]
    assert len(ids) == len(rows), "load_rows kept another number of rows than the file holds"
    out = {}
    for rid, row in zip(ids, rows):
        split = split_accuracy(model, [row])
        out[rid] = {k: {"tokens": v["tokens"], **{r: v[r] * v["tokens"] for r in RATES}} for k, v in split.items()}
    return out


def pooled(rows: list[dict], key: str, rate: str) -> float | None:
    tokens = sum(r.get(key, {}).get("tokens", 0) for r in rows)
    return sum(r.get(key, {}).get(rate, 0.0) for r in rows) / tokens if tokens else None


def paired_difference(a: dict, b: dict, prompts: list[str], draws: list[list[str]], key: str, rate: str):
    """Pooled rate of rows ``a`` minus that of rows ``b`` (each: prompt id -> counts) over ``prompts``, and its 95%
    interval over the bootstrap ``draws`` of prompts (both sides resampled together). None when a side has none."""
    va, vb = pooled([a[p] for p in prompts], key, rate), pooled([b[p] for p in prompts], key, rate)
    if va is None or vb is None:
        return None
    diffs = sorted(pooled([a[p] for p in d], key, rate) - pooled([b[p] for p in d], key, rate) for d in draws)
    return va, vb, diffs[int(0.025 * len(diffs))], diffs[int(0.975 * len(diffs)) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--greedy", required=True)
    parser.add_argument("--sampled", required=True)
    parser.add_argument("--model", default="hamburger/default_model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_in_layout(args.model)
    sets = {name: per_row(model, tokenizer, path) for name, path in (("greedy", args.greedy),
                                                                      ("sampled", args.sampled))}
    prompts = sorted(set(sets["greedy"]) & set(sets["sampled"]))
    rng = random.Random(0)
    draws = [[rng.choice(prompts) for _ in prompts] for _ in range(args.resamples)]
    table = {}
    print(f"{len(prompts)} prompts with both answers; model {args.model}")
    print(f"{'key':9} {'rate':12} {'tokens g/s':>13} {'greedy':>8} {'sampled':>8} {'g - s':>8}  95% interval")
    for key in KEYS:
        table[key] = {}
        for rate in RATES:
            found = paired_difference(sets["greedy"], sets["sampled"], prompts, draws, key, rate)
            if found is None:
                continue
            g, s, lo, hi = found
            n_g = sum(sets["greedy"][p].get(key, {}).get("tokens", 0) for p in prompts)
            n_s = sum(sets["sampled"][p].get(key, {}).get("tokens", 0) for p in prompts)
            table[key][rate] = {"greedy": g, "sampled": s, "diff": g - s, "interval": [lo, hi],
                                "tokens": [n_g, n_s]}
            print(f"{key:9} {rate:12} {f'{n_g}/{n_s}':>13} {g:8.4f} {s:8.4f} {g - s:+8.4f}  [{lo:+.4f}, {hi:+.4f}]")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": args.model, "greedy": args.greedy, "sampled": args.sampled,
                                              "prompts": len(prompts), "table": table, "rows": sets,
                                              "machine": machine_info(args.threads, "fp32")},
                                             separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
