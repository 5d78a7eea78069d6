"""The cost of one draw from a warped 49,152-token distribution (the default base's vocabulary; temperature 0.7, top-p
0.9 of random logits with scale 3) on this CPU: `torch.multinomial` (the draw before session 36) against the inverse-CDF
`sampling.sample`; median of 500 draws each, 2 threads, and the number of tokens the top-p set kept.

    python experiments/2026-11-27-fast-draw/draw_cost.py > experiments/2026-11-27-fast-draw/draw_cost.json
"""

import json
import statistics
import sys
import time
from pathlib import Path

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.engine.sampling import DecodingConfig, sample, warped_probs

sys.path.insert(0, str(Path(__file__).parent))
from ab import multinomial_sample  # noqa: E402


def median_ms(fn, reps: int = 500) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(1000 * statistics.median(times), 4)


def main() -> None:
    torch.set_num_threads(2)
    logits = torch.randn(49152, generator=torch.Generator().manual_seed(0)) * 3
    probs = warped_probs(logits, DecodingConfig(temperature=0.7, top_p=0.9))
    g = torch.Generator().manual_seed(0)
    out = {"machine": machine_info(2, "float32"), "vocab": len(probs), "support": int((probs > 0).sum()),
           "multinomial_ms": median_ms(lambda: multinomial_sample(probs, g)),
           "inverse_cdf_ms": median_ms(lambda: sample(probs, g))}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
