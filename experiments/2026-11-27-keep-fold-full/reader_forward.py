"""What a fold reader's adapters cost a verify_fold forward (session 41): median ms of one base forward of k positions
on a 300-slot cache, for a checkpoint whose adapters act at `lora_scope: after_fold` (default: the warm start under
that scope, `rebuild.py OUT after_fold`), in four arms interleaved forward by forward in one process (2 threads,
fp32, MKL_CBWR as `import hamburger` sets it):

  * idle: before the row's first fold (the adapters are switched off: the base's own forward, the lean stack);
  * lean: after it, the adapters acting in the lean stack (each LoRA layer's own forward, session 41);
  * fused: after it, the lean stack reading each layer's merged weight (`fuse_adapters`, session 42; before session
    42 the lines below have no such arm);
  * modules: after it, the adapters acting in transformers' modules (where such forwards ran before session 41).

Appends one JSON line (machine, env, ms by k and arm; since session 42 also the seconds that building every layer's
merged weight takes, the median of 3, and their size in MiB) to reader_forward.jsonl here.

    python experiments/2026-11-27-keep-fold-full/reader_forward.py [CHECKPOINT]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.loading import load_model
from hamburger.core.lora import lora_layers
from hamburger.engine.cache import SlotCache

SLOTS, POSITIONS, REPS = 300, (1, 3, 6), 40
# arm -> (lean stack, folded, merged weights)
ARMS = {"idle": (True, False, True), "lean": (True, True, False), "fused": (True, True, True),
        "modules": (False, True, False)}


def main() -> None:
    checkpoint = sys.argv[1] if len(sys.argv) > 1 else "runs/keep-fold/warm-after-export"
    torch.set_num_threads(2)
    model, tokenizer = load_model(checkpoint)[:2]
    assert model.config.lora_scope == "after_fold", f"{checkpoint} has no after_fold adapters"
    ids = tokenizer("The quick brown fox jumps over the lazy dog. " * 40, add_special_tokens=False)["input_ids"][:SLOTS]
    costs = {}
    with torch.inference_mode():
        cache = SlotCache(model.base.config, 1)
        mask = cache.extend(torch.ones(1, SLOTS, dtype=torch.bool))
        model.base_forward(model.embed(torch.tensor([ids])), torch.arange(SLOTS)[None], mask, cache.kv)
        for k in POSITIONS:
            x, positions = torch.tensor([[ids[-1]] * k]), torch.arange(SLOTS, SLOTS + k)[None]
            times = {arm: [] for arm in ARMS}
            for rep in range(REPS):
                for arm, (lean, folded, fuse) in ARMS.items():
                    model.lean, model.fuse_adapters = lean, fuse
                    start = time.perf_counter()
                    mask = cache.extend(torch.ones(1, k, dtype=torch.bool))
                    model.base_forward(model.embed(x), positions, mask, cache.kv,
                                       merged_before=torch.tensor([folded]))
                    if rep >= 5:  # (warm-up)
                        times[arm].append(time.perf_counter() - start)
                    cache.drop_last(k)
            costs[k] = {arm: round(1000 * statistics.median(t), 2) for arm, t in times.items()}
        layers = lora_layers(model.base)  # what the merged weights cost once: building them all, and their size
        builds = []
        for _ in range(3):
            for layer in layers:
                layer.__dict__.pop("_merged", None)
            start = time.perf_counter()
            for layer in layers:
                layer.merged_weight()
            builds.append(time.perf_counter() - start)
    merged_mib = sum(layer.merged_weight().numel() * layer.merged_weight().element_size() for layer in layers) / 2**20
    row = {"machine": machine_info(2, "float32"), "checkpoint": Path(checkpoint).name, "cache_slots": SLOTS,
           "median_ms": costs, "merged_build_s": round(statistics.median(builds), 3), "merged_mib": round(merged_mib)}
    with open(Path(__file__).with_name("reader_forward.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(costs))


if __name__ == "__main__":
    main()
