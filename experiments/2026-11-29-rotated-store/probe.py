"""How much of each layer's keys and values a store's rounding loses, with and without an orthogonal rotation of
each head's channels before rounding (read back: dequantize, then rotate back). The base's own greedy answers to
dev GSM8K rows 360-375 and chat dev prompts 240-255 (256 tokens, from session 53's and 52's evals) are run through
the base; every answer slot's keys and values are rounded; the relative error ||x - x'|| / ||x|| is averaged over
layers, and the attention output of each answer's last query over its answer slots is compared too.
    .venv/bin/python experiments/2026-11-29-rotated-store/probe.py > experiments/2026-11-29-rotated-store/probe.txt
"""

from __future__ import annotations

import json

import torch

from hamburger.core.base import load_base
from hamburger.engine.quantized import dequantize, quantize

torch.manual_seed(0)
SOURCES = [("experiments/2026-11-29-default-bits/eval-chat240-360/examples.jsonl", 16),
           ("experiments/2026-11-29-quantized-history/eval-rows360-480-q8/examples.jsonl", 16)]


def rotation(d: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    q, r = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r))).float()


def hadamard(d: int) -> torch.Tensor:
    h = torch.ones(1, 1)
    while h.shape[0] < d:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)])
    return h / d ** 0.5


def grouped(x, bits, group):
    """Symmetric rounding with one scale per ``group`` channels (the library's `quantize`, any group)."""
    top, d = 2 ** (bits - 1) - 1, x.shape[-1]
    g = x.reshape(*x.shape[:-1], d // group, group)
    s = (g.abs().amax(-1, keepdim=True) / top).clamp_min(1e-30)
    return (torch.round(g / s).clamp(-top, top) * s).reshape(x.shape)


def per_channel(x, bits, tokens=32):
    """KIVI's key rounding: one scale per channel over each run of ``tokens`` slots (x [heads, T, d])."""
    out = x.clone()
    for start in range(0, x.shape[1] - tokens + 1, tokens):
        out[:, start:start + tokens] = grouped(x[:, start:start + tokens].transpose(1, 2), bits, tokens).transpose(1, 2)
    return out


def rounded(x, bits, rot=None, group=None):
    if rot is not None:
        return rounded(x @ rot, bits, None, group) @ rot.T
    if group is not None:
        return grouped(x, bits, group)
    return dequantize(*quantize(x, bits))


def main() -> None:
    model, tok, _ = load_base()
    answers = []
    for path, n in SOURCES:
        rows = [json.loads(line) for line in open(path)]
        seen = set()
        for r in rows:
            if r["method"] == "base" and r.get("draw", 0) in (0, None) and r["id"] not in seen and len(seen) < n:
                seen.add(r["id"])
                answers.append(r["text"])
    d = model.config.hidden_size // model.config.num_attention_heads
    arms = {"q8": (8, None), "q4": (4, None), "q4-orth": (4, rotation(d)), "q4-hadamard": (4, hadamard(d)),
            "q3-orth": (3, rotation(d)),
            "q4-g16": (4, None, 16), "q4-had-g16": (4, hadamard(d), 16), "q4-had-g64": (4, hadamard(d), 64),
            "q4-kivi": None, "k8v4": None, "q5-had": (5, hadamard(d), 32), "q6-had": (6, hadamard(d), 32)}
    err = {a: {"k": [], "v": [], "att": []} for a in arms}
    for text in answers:
        ids = tok(text, return_tensors="pt").input_ids[:, :256]
        with torch.no_grad():
            out = model(ids, use_cache=True)
        cache = out.past_key_values
        for layer in cache.layers:
            k, v = layer.keys[0], layer.values[0]  # [kv heads, T, d]
            q = k[:, -1:]  # a stand-in query: the last slot's key
            ref = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, -1) @ v
            for a, arm in arms.items():
                if a == "q4-kivi":
                    kk, vv = per_channel(k, 4), rounded(v, 4, None, 32)
                elif a == "k8v4":
                    kk, vv = rounded(k, 8), rounded(v, 4)
                else:
                    kk, vv = rounded(k, *arm), rounded(v, *arm)
                err[a]["k"].append(((kk - k).norm() / k.norm()).item())
                err[a]["v"].append(((vv - v).norm() / v.norm()).item())
                att = torch.softmax(q @ kk.transpose(-1, -2) / d ** 0.5, -1) @ vv
                err[a]["att"].append(((att - ref).norm() / ref.norm()).item())
    print(f"{len(answers)} answers, {len(cache.layers)} layers, head dim {d}")
    for a, e in err.items():
        print(a, " ".join(f"{m} {sum(x) / len(x):.4f}" for m, x in e.items()))


if __name__ == "__main__":
    main()
