"""One decode step of the bundled base at several batch sizes on a cache of CTX positions: transformers' forward on
its `DynamicCache` (what `distill` ran through HF `generate` up to session 85) against `answers.BaseStep` (the lean
pass on a `SlotCache`, what it runs since session 86). Median of the timed steps after WARMUP, each row drawing its
argmax; no padding. Stop (kill -STOP) the background draw first.

    python experiments/2026-12-07-continuous-distill/step_speed.py --dtype bfloat16 > \
        experiments/2026-12-07-continuous-distill/step-speed-HOST.txt
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

import hamburger  # noqa: F401  (its MKL setting)
from hamburger.core.base import load_base
from hamburger.data.answers import BaseStep
from hamburger.engine.cache import SlotCache


def hf_steps(model, ids: torch.Tensor, steps: int) -> list[float]:
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    token = model(input_ids=ids, past_key_values=cache, use_cache=True).logits[:, -1].argmax(-1, keepdim=True)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        token = model(input_ids=token, past_key_values=cache, use_cache=True).logits[:, -1].argmax(-1, keepdim=True)
        times.append(time.perf_counter() - start)
    return times


def read(step: BaseStep, ids: torch.Tensor) -> tuple[SlotCache, torch.Tensor]:
    """A `SlotCache` holding ``ids`` [batch, ctx] (no padding) and each row's argmax after them."""
    batch, ctx = ids.shape
    cache = SlotCache(step.base.config, batch)
    token = step(ids, torch.arange(ctx).expand(batch, -1), cache, torch.ones(batch, ctx, dtype=torch.bool))
    return cache, token.argmax(-1, keepdim=True)


def next_token(step: BaseStep, cache: SlotCache, token: torch.Tensor, position: int) -> torch.Tensor:
    """One decode step of every row at ``position``: each row's argmax."""
    valid = torch.ones(token.shape[0], 1, dtype=torch.bool)
    return step(token, torch.full((token.shape[0], 1), position), cache, valid).argmax(-1, keepdim=True)


def lean_steps(step: BaseStep, ids: torch.Tensor, steps: int) -> list[float]:
    cache, token = read(step, ids)
    times = []
    for i in range(steps):
        start = time.perf_counter()
        token = next_token(step, cache, token, ids.shape[1] + i)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", help="the base's dtype (bfloat16 or float32)")
    parser.add_argument("--ctx", type=int, default=300, help="positions in the cache before the timed steps")
    parser.add_argument("--batches", default="8,16,32,48", help="comma-separated batch sizes")
    parser.add_argument("--steps", type=int, default=10, help="steps per batch size, warm-up included")
    parser.add_argument("--warmup", type=int, default=2, help="first steps left out of the median")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, _, _ = load_base(None, args.dtype)
    step = BaseStep(model)
    print(f"{platform.machine()}, torch {torch.__version__}, {args.dtype}, {args.threads} threads, cache of {args.ctx}"
          f" positions, median of {args.steps - args.warmup} steps; lean pass: {step.lean is not None}")
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for batch in map(int, args.batches.split(",")):
            ids = torch.randint(100, 40000, (batch, args.ctx), generator=generator)
            line = [f"batch {batch}:"]
            for name, run in (("transformers", lambda: hf_steps(model, ids, args.steps)),
                              ("BaseStep", lambda: lean_steps(step, ids, args.steps))):
                median = statistics.median(run()[args.warmup:])
                line.append(f"{name} {median * 1000:.1f} ms ({batch / median:.1f} tokens/s)")
            print(" ".join(line), flush=True)


if __name__ == "__main__":
    main()
