"""Teacher-forced: how often the base's next token changes when the answer's slots older than a 60-token window are
read back from a store of each rounding scheme (the window's and the newest slots exact). The base's own greedy
answers (256 tokens) to 16 chat dev prompts (240-255) and 16 dev GSM8K rows (360-375), text only, run through the
base once exactly and once per scheme; over every position with rounded history: the share whose greedy token
differs from the exact run's, and the mean KL(exact || scheme) of the next-token distribution.
    .venv/bin/python experiments/2026-11-29-rotated-store/tf_probe.py > experiments/2026-11-29-rotated-store/tf_probe.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from transformers import AttentionInterface

sys.path.insert(0, str(Path(__file__).parent))
from probe import SOURCES, hadamard, per_channel, rounded  # noqa: E402

from hamburger.core.base import load_base  # noqa: E402

WINDOW = 60
SCHEME = {"fn": None}


def schemes(d: int) -> dict:
    h = hadamard(d)
    return {
        "q8": lambda k, v: (rounded(k, 8), rounded(v, 8)),
        "q4 (the library's)": lambda k, v: (rounded(k, 4), rounded(v, 4)),
        "q4-g16": lambda k, v: (rounded(k, 4, None, 16), rounded(v, 4, None, 16)),
        "q4-hadamard": lambda k, v: (rounded(k, 4, h, 32), rounded(v, 4, h, 32)),
        "q4-hadamard-g16": lambda k, v: (rounded(k, 4, h, 16), rounded(v, 4, h, 16)),
        "q4-kivi (keys per channel)": lambda k, v: (per_channel(k, 4), rounded(v, 4)),
        "q4-kivi, values hadamard": lambda k, v: (per_channel(k, 4), rounded(v, 4, h, 32)),
        "k8 v4": lambda k, v: (rounded(k, 8), rounded(v, 4)),
        "k8 v4-hadamard": lambda k, v: (rounded(k, 8), rounded(v, 4, h, 32)),
    }


def attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Exact attention over the window, the scheme's read-back beyond it."""
    t = query.shape[2]
    groups = query.shape[1] // key.shape[1]
    pos = torch.arange(t)
    causal = pos[None, :] <= pos[:, None]
    old = pos[None, :] < pos[:, None] - WINDOW
    kq, vq = (key, value) if SCHEME["fn"] is None else SCHEME["fn"](key[0], value[0])
    kq, vq = kq[None] if kq.dim() == 3 else kq, vq[None] if vq.dim() == 3 else vq
    rep = lambda x: x.repeat_interleave(groups, 1)  # noqa: E731
    s = torch.where(old, query @ rep(kq).transpose(-1, -2), query @ rep(key).transpose(-1, -2)) * scaling
    p = torch.softmax(s.masked_fill(~causal, float("-inf")), -1)
    out = (p * old) @ rep(vq) + (p * ~old) @ rep(value)
    return out.transpose(1, 2).contiguous(), None


def main() -> None:
    import json
    AttentionInterface.register("store_probe", attention)
    model, tok, _ = load_base()
    model.set_attn_implementation("store_probe")
    d = model.config.hidden_size // model.config.num_attention_heads
    answers = []
    for path, n in SOURCES:
        seen = set()
        for r in map(json.loads, open(path)):
            if r["method"] == "base" and r["id"] not in seen and len(seen) < n:
                seen.add(r["id"])
                answers.append(r["text"])
    rows = {}
    for text in answers:
        ids = tok(text, return_tensors="pt").input_ids[:, :256]
        with torch.no_grad():
            SCHEME["fn"] = None
            ref = torch.log_softmax(model(ids).logits[0, WINDOW + 1:].float(), -1)
            for name, fn in schemes(d).items():
                SCHEME["fn"] = fn
                got = torch.log_softmax(model(ids).logits[0, WINDOW + 1:].float(), -1)
                r = rows.setdefault(name, [0, 0, 0.0])
                r[0] += int((got.argmax(-1) != ref.argmax(-1)).sum())
                r[1] += got.shape[0]
                r[2] += float((ref.exp() * (ref - got)).sum())
    print(f"{len(answers)} answers, positions with rounded history: {rows['q8'][1]}")
    print("| scheme | greedy token changed | mean KL (nats) |\n|---|---|---|")
    for name, (changed, n, kl) in rows.items():
        print(f"| {name} | {100 * changed / n:.2f}% | {kl / n:.5f} |")


if __name__ == "__main__":
    main()
