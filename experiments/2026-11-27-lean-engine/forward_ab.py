"""Median ms of one base forward of k positions on a 300-slot cache, transformers' stack on its `DynamicCache`
(before session 34) against `LeanStack` on the spare-slot cache (after), interleaved forward by forward in one
process (2 threads, fp32, the default model's base, MKL_CBWR as `import hamburger` sets it). Appends one JSON line
(machine, env, ms by k) to forward_ab.jsonl here.

    python experiments/2026-11-27-lean-engine/forward_ab.py
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch
from transformers import DynamicCache

from hamburger.bench.machine import machine_info
from hamburger.core.loading import load_model
from hamburger.engine.cache import SlotCache

SLOTS, POSITIONS, REPS = 300, (1, 2, 3, 4, 6, 8), 40


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer = load_model(None)[:2]
    ids = tokenizer("The quick brown fox jumps over the lazy dog. " * 40, add_special_tokens=False)["input_ids"][:SLOTS]
    caches = {}
    with torch.inference_mode():
        for arm in ("before", "after"):
            cache = caches[arm] = SlotCache(model.base.config, 1)
            if arm == "before":
                cache.kv = DynamicCache(config=model.base.config)
            mask = cache.extend(torch.ones(1, SLOTS, dtype=torch.bool))
            model.base_forward(model.embed(torch.tensor([ids])), torch.arange(SLOTS)[None], mask, cache.kv)
        costs = {}
        for k in POSITIONS:
            x, positions = torch.tensor([[ids[-1]] * k]), torch.arange(SLOTS, SLOTS + k)[None]
            times = {arm: [] for arm in caches}
            for rep in range(REPS):
                for arm, cache in caches.items():
                    model.lean = arm == "after"
                    start = time.perf_counter()
                    mask = cache.extend(torch.ones(1, k, dtype=torch.bool))
                    model.base_forward(model.embed(x), positions, mask, cache.kv)
                    if rep >= 5:  # (warm-up)
                        times[arm].append(time.perf_counter() - start)
                    cache.drop_last(k)
            costs[k] = {arm: round(1000 * statistics.median(t), 2) for arm, t in times.items()}
    row = {"machine": machine_info(2, "float32"), "cache_slots": SLOTS, "median_ms": costs}
    with open(Path(__file__).with_name("forward_ab.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(costs))


if __name__ == "__main__":
    main()
