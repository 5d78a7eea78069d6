"""Why verify mode gains less over HF `generate` on this session's CPU: the median cost of one base forward of k
positions (and the LM head on k rows, default and fast layout) on a 300-slot cache, under the MKL_CBWR value this
process was started with (`benchmarks.verify_bench.step_costs`; 2 threads, fp32, the default model). Appends one JSON
line (machine, env, costs) to forward_cost.jsonl here, or to the file named by the first argument.

    for v in AVX2 AUTO; do MKL_CBWR=$v python experiments/2026-11-27-growing-first/forward_cost.py; done
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.loading import load_model

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # (the benchmark's cost probe)
from benchmarks.verify_bench import step_costs  # noqa: E402

SLOTS, MAX_K, REPS = 300, 10, 15


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer = load_model(None)[:2]
    prompt = tokenizer("The quick brown fox jumps over the lazy dog. " * 40, add_special_tokens=False)["input_ids"]
    costs = step_costs(model, prompt[:SLOTS], REPS, max_k=MAX_K - 1)
    row = {"mkl_cbwr": os.environ.get("MKL_CBWR"), "machine": machine_info(2, "float32"),
           "costs_ms": {k: round(v, 3) if isinstance(v, float) else v for k, v in costs.items()}}
    with open(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("forward_cost.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row["costs_ms"], indent=1))


if __name__ == "__main__":
    main()
