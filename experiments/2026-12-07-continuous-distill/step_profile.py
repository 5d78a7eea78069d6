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
from step_speed import next_token, read  # (this folder's)


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
    with torch.inference_mode():
        cache, token = read(step, ids)
        for at in range(args.ctx, args.ctx + 3):
            token = next_token(step, cache, token, at)
        with torch.profiler.profile() as prof:
            for at in range(args.ctx + 3, args.ctx + 3 + args.steps):
                token = next_token(step, cache, token, at)
    print(f"torch {torch.__version__}, {args.dtype}, {args.threads} threads, batch {args.batch}, cache of {args.ctx} "
          f"positions, {args.steps} steps")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
