"""One layer's reading of the store, piece by piece (README.md; reported only): microseconds per call, the median of
5 rounds that take turns, at batch 1 and 8, with SmolLM2-135M's heads (9 query heads, 3 key/value heads of 64
channels), 3 new tokens, 150 stored slots and 64 cache slots. The old 4-bit read (a two-column embedding lookup, the
code of session 56) beside today's `dequantize`, which reads the same values.

    python experiments/2026-12-03-store-speed/micro.py > experiments/2026-12-03-store-speed/micro.txt
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.engine.quantized import _nibbles, dequantize, quantize, rotation  # noqa: E402

HEADS, KV_HEADS, D, NEW, STORED, CACHED = 9, 3, 64, 3, 150, 64


def old_dequantize(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Session 56's read of a 4-bit store (`dequantize` before this session)."""
    values = F.embedding(values.int(), _nibbles(scales.dtype, values.device)).flatten(-2)
    grouped = values.unflatten(-1, (scales.shape[-1], values.shape[-1] // scales.shape[-1]))
    return (grouped * scales[..., None]).flatten(-2)


def per_call(fn, calls: int = 400) -> float:
    for _ in range(20):
        fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def pieces(batch: int) -> dict:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(batch, HEADS, NEW, D, generator=g)
    k, v = (torch.randn(batch, KV_HEADS, NEW, D, generator=g) for _ in range(2))
    keys, values = (torch.randn(batch, KV_HEADS, CACHED, D, generator=g) for _ in range(2))
    kq, ks = quantize(torch.randn(batch, KV_HEADS, STORED, D, generator=g), 8)
    vq, vs = quantize(torch.randn(batch, KV_HEADS, STORED, D, generator=g), 4)
    assert torch.equal(old_dequantize(vq, vs), dequantize(vq, vs))
    turn = rotation(D)
    all_keys, all_values = torch.cat([dequantize(kq, ks), keys], 2), torch.cat([dequantize(vq, vs), values], 2)
    mask = torch.ones(batch, 1, NEW, STORED + CACHED, dtype=torch.bool)
    return {
        "4-bit values, old read": lambda: old_dequantize(vq, vs),
        "4-bit values, new read": lambda: dequantize(vq, vs),
        "8-bit keys": lambda: dequantize(kq, ks),
        "turn q, k, v and the output": lambda: (q @ turn, k @ turn, v @ turn, q @ turn.T),
        "two concatenations": lambda: (torch.cat([all_keys[:, :, :STORED], keys], 2),
                                       torch.cat([all_values[:, :, :STORED], values], 2)),
        "attention over store and cache": lambda: F.scaled_dot_product_attention(q, all_keys, all_values,
                                                                                 attn_mask=mask, enable_gqa=True),
        "attention over the cache alone": lambda: F.scaled_dot_product_attention(q, keys, values, enable_gqa=True),
    }


def main() -> None:
    torch.set_num_threads(2)
    print(json.dumps(machine_info(torch.get_num_threads(), "float32")))
    for batch in (1, 8):
        fns = pieces(batch)
        rounds = {name: [] for name in fns}
        for _ in range(5):
            for name, fn in fns.items():
                rounds[name].append(per_call(fn))
        print(f"\n## batch {batch}: microseconds per call (median of 5 rounds; all rounds)\n")
        for name, times in rounds.items():
            print(f"- {name}: {statistics.median(times):.1f} ({', '.join(f'{t:.0f}' for t in times)})")


if __name__ == "__main__":
    main()
