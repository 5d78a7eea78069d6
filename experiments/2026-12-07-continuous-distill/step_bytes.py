"""Whether one decode step of `answers.BaseStep` is bound by memory: for each batch size, the step's median time, the
bytes it must read at least (every weight it multiplies by once, the LM head included, and every key and value the
cache holds), and those bytes over that time, beside the machine's copy bandwidth (`bench.run.copy_bandwidth_gbs`,
read + write). The same for one layer's attention alone: transformers' SDPA on the cache's keys and values, as the
lean pass calls it, against the bytes of those keys and values, and the same attention written as float32 products
and sums and compiled by inductor (`torch.compile`, dynamic shapes; gcc), with its largest difference from SDPA's
output. Stop (kill -STOP) the background draw first.

    python experiments/2026-12-07-continuous-distill/step_bytes.py > \
        experiments/2026-12-07-continuous-distill/step-bytes-HOST.txt
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

import hamburger  # noqa: F401  (its MKL setting)
from hamburger.bench.run import copy_bandwidth_gbs
from hamburger.core.base import load_base
from hamburger.data.answers import BaseStep
from step_speed import next_token, read  # (this folder's)


def median_ms(run, repeats: int, warmup: int = 2) -> float:
    times = []
    for _ in range(warmup + repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times[warmup:]) * 1000


def weight_bytes(model) -> int:
    """Bytes of every weight a step multiplies by: all parameters but the input embedding, whose step reads one row
    a token, unless the LM head is that same matrix (tied), which a step reads whole."""
    embedding = model.get_input_embeddings().weight
    tied = embedding is model.get_output_embeddings().weight
    return sum(p.numel() * p.element_size() for p in model.parameters() if p is not embedding or tied)


def products(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, scale: float) -> torch.Tensor:
    """One position's attention, query heads grouped onto their key/value heads (q [B, kv heads, group, d]), as
    float32 products and sums: what inductor fuses into loops over the cache."""
    scores = (q.float()[:, :, :, None, :] * k.float()[:, :, None, :, :]).sum(-1) * scale
    weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    return (weights[:, :, :, :, None] * v.float()[:, :, None, :, :]).sum(-2).to(q.dtype)


def layer_attention(step: BaseStep, cache, batch: int):
    """One call of layer 0's attention as the lean pass makes it on one new position: a function of nothing."""
    attn = step.stack.layers[0].self_attn
    layer = cache.kv.layers[0]
    keys, values = layer.keys, layer.values
    config = step.base.config
    q = torch.randn(batch, config.num_attention_heads, 1, attn.head_dim, dtype=keys.dtype)
    mask = torch.ones(batch, 1, 1, keys.shape[2], dtype=torch.bool)
    attend, compiled = step.lean.attend, torch.compile(products, dynamic=True)
    grouped = q.view(batch, keys.shape[1], -1, attn.head_dim)  # (transformers' own grouping for one position)
    sdpa = attend(attn, q, keys, values, mask, dropout=0.0, scaling=attn.scaling)[0]
    ours = compiled(grouped, keys, values, mask, attn.scaling).reshape(batch, keys.shape[1] * grouped.shape[2], 1, -1)
    difference = (ours.transpose(1, 2).float() - sdpa.float()).abs().max().item()
    return (lambda: attend(attn, q, keys, values, mask, dropout=0.0, scaling=attn.scaling)), \
        (lambda: compiled(grouped, keys, values, mask, attn.scaling)), difference, \
        keys.numel() * keys.element_size() + values.numel() * values.element_size(), keys.is_contiguous()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", help="the base's dtype")
    parser.add_argument("--ctx", type=int, default=300, help="positions in the cache before the timed steps")
    parser.add_argument("--batches", default="8,32,48", help="comma-separated batch sizes")
    parser.add_argument("--repeats", type=int, default=8, help="timed steps (and attention calls x 5) per batch")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, _, _ = load_base(None, args.dtype)
    step = BaseStep(model)
    weights = weight_bytes(model)
    bandwidth = copy_bandwidth_gbs()
    print(f"{platform.machine()}, torch {torch.__version__}, {args.dtype}, {args.threads} threads, cache of {args.ctx}"
          f" positions; weights a step reads {weights / 1e6:.1f} MB; copy bandwidth {bandwidth:.1f} GB/s (read + write)")
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for batch in map(int, args.batches.split(",")):
            ids = torch.randint(100, 40000, (batch, args.ctx), generator=generator)
            cache, token = read(step, ids)
            kv = cache.kv_bytes()
            state = {"token": token, "at": args.ctx}

            def one_step():
                state["token"] = next_token(step, cache, state["token"], state["at"])
                state["at"] += 1
            ms = median_ms(one_step, args.repeats)
            attend, compiled, difference, layer_kv, contiguous = layer_attention(step, cache, batch)
            attention_ms = median_ms(attend, 5 * args.repeats)
            compiled_ms = median_ms(compiled, 5 * args.repeats)
            print(f"batch {batch}: step {ms:.1f} ms, reads >= {(weights + kv) / 1e6:.0f} MB (weights "
                  f"{weights / 1e6:.0f}, keys and values {kv / 1e6:.0f}) = {(weights + kv) / ms / 1e6:.1f} GB/s; "
                  f"one layer's attention {attention_ms:.3f} ms on {layer_kv / 1e6:.2f} MB of keys and values"
                  f"{'' if contiguous else ' (views)'} = {layer_kv / attention_ms / 1e6:.1f} GB/s; compiled products "
                  f"{compiled_ms:.3f} ms (largest difference {difference:.2g})", flush=True)


if __name__ == "__main__":
    main()
