"""Where one decode step of `answers.BaseStep` spends its time: PyTorch's profiler over STEPS steps of the bundled
base at BATCH rows on a cache of CTX positions (bf16, 2 threads), operators by self CPU time. Stop the draw first.

    python experiments/2026-12-07-continuous-distill/step_profile.py > \
        experiments/2026-12-07-continuous-distill/step-profile-avx512bf16-session86.txt
"""

from __future__ import annotations

import argparse

import torch

import hamburger  # noqa: F401  (its MKL setting)
from hamburger.core.base import load_base
from hamburger.data.answers import BaseStep
from hamburger.engine.cache import SlotCache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", help="the base's dtype")
    parser.add_argument("--batch", type=int, default=32, help="rows")
    parser.add_argument("--ctx", type=int, default=300, help="positions in the cache before the profiled steps")
    parser.add_argument("--steps", type=int, default=10, help="profiled steps (after 3 unprofiled)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, _, _ = load_base(None, args.dtype)
    step = BaseStep(model)
    ids = torch.randint(100, 40000, (args.batch, args.ctx), generator=torch.Generator().manual_seed(0))
    valid = torch.ones(args.batch, args.ctx, dtype=torch.bool)
    with torch.inference_mode():
        cache = SlotCache(model.config, args.batch)
        token = step(ids, torch.arange(args.ctx).expand(args.batch, -1), cache, valid).argmax(-1, keepdim=True)
        at = args.ctx
        for _ in range(3):
            token = step(token, torch.full((args.batch, 1), at), cache, valid[:, :1]).argmax(-1, keepdim=True)
            at += 1
        with torch.profiler.profile() as prof:
            for _ in range(args.steps):
                token = step(token, torch.full((args.batch, 1), at), cache, valid[:, :1]).argmax(-1, keepdim=True)
                at += 1
    print(f"torch {torch.__version__}, {args.dtype}, {args.threads} threads, batch {args.batch}, cache of {args.ctx} "
          f"positions, {args.steps} steps")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
