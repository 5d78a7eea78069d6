"""What the lean forward's cheaper parts do to a prompt's prefill: `LeanStack` as of a given commit (default 0fc2e7a,
before them) against the working tree's, on the default model's base, prefills of 64, 300 and 1000 positions on an
empty cache (the engine's spare-slot cache), alternated rep by rep, median of 20 each, 2 threads; and whether both give
the same bits.

    python experiments/2026-11-27-step-profile/prefill_cost.py > experiments/2026-11-27-step-profile/prefill_cost.json
"""

import json
import sys
from pathlib import Path

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.engine.cache import spare_slots_cache

sys.path.insert(0, str(Path(__file__).parent))
from forward_cost import alternate, setup  # noqa: E402

REPS = 20


def main() -> None:
    commit, model, stack, runners = setup()
    g = torch.Generator().manual_seed(0)
    d = stack.config.hidden_size
    out = {"machine": machine_info(2, "float32"), "before_commit": commit, "median_ms": {}, "identical": {}}
    with torch.inference_mode():
        for length in (64, 300, 1000):
            x = torch.randn(1, length, d, generator=g)
            mask = torch.ones(length, length, dtype=torch.bool).tril()[None, None]
            positions = torch.arange(length)[None]

            def prefill(runner, cache):
                final, taps = runner(x, positions, mask, cache, model.config.tap_layers)
                return final, *taps
            out["median_ms"][length], out["identical"][length] = alternate(
                runners, prefill, REPS, 2, prepare=lambda: spare_slots_cache(stack.config))
            print(length, out["median_ms"][length], out["identical"][length], file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
