"""Teacher-forced: how often the base's next token changes when the prompt's slots are stored too (8-bit keys, 4-bit
values, turned: the default fold's store), beside the default (only answer slots past the window stored).

The base's own greedy answers (256 tokens) to 16 chat dev prompts (240-255) and 16 dev GSM8K rows (360-375), after
their chat-templated prompts, run through the base once exactly and once per scheme. At answer position j (n = j + 1
answer tokens in the cache) an answer slot is stored once it is older than the default window (60 tokens, or 45% of
n), as in `../2026-11-29-rotated-store/tf_probe.py` (by token, not by the fold's groups). The schemes:
  * answer: the default fold's store;
  * answer + prompt: every prompt slot is stored too, once the answer has stored slots;
  * answer + prompt, first N kept: the same but the first N prompt slots (the chat template's start) stay exact.
Over every answer position with a stored slot: the share whose greedy token differs from the exact run's and the mean
KL(exact || scheme).
    .venv/bin/python experiments/2026-11-29-prompt-store/tf_probe.py > experiments/2026-11-29-prompt-store/tf_probe.txt
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import AttentionInterface

from hamburger.core.base import load_base
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.quantized import rotation, round_trip

EXP = Path(__file__).resolve().parents[1]
CHAT = (EXP / "2026-11-29-default-bits/eval-chat240-360/examples.jsonl", EXP / "2026-11-29-default-bits/chat_dev_240_360.jsonl")
MATH = (EXP / "2026-11-29-quantized-history/eval-rows360-480-q8/examples.jsonl",
        EXP / "2026-11-28-full-head-cache/gsm8k_dev_360_480.jsonl")
N, LENGTH, WINDOW, SHARE = 16, 256, 60, 0.45
SCHEMES = {"answer (the default)": None, "answer + prompt": 0, "answer + prompt, first 4 kept": 4,
           "answer + prompt, first 16 kept": 16}
STATE: dict = {}


def stored_mask(t: int, prompt: int, keep_first: int | None) -> torch.Tensor:
    """[t, t] bool: key slot k is read from the store by query position q."""
    pos = torch.arange(t)
    n = (pos - prompt + 1).clamp(min=0)  # answer tokens in the cache at each query
    window = torch.maximum(torch.full_like(n, WINDOW), (SHARE * n).long())
    edge = prompt + n - window  # answer slots before this are stored
    answer = (pos[None, :] >= prompt) & (pos[None, :] < edge[:, None])
    if keep_first is None:
        return answer
    prompt_slots = (pos[None, :] < prompt) & (pos[None, :] >= keep_first) & (n > window)[:, None]
    return answer | prompt_slots


def attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Exact attention but for the stored slots, read back through the store's rounding."""
    t, groups = query.shape[2], query.shape[1] // key.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    old = STATE.get("mask")
    rep = lambda x: x.repeat_interleave(groups, 1)  # noqa: E731
    s = query @ rep(key).transpose(-1, -2)
    if old is not None:
        turn = STATE["turn"]
        kq, vq = round_trip(key, 8, turn), round_trip(value, 4, turn)
        s = torch.where(old, query @ rep(kq).transpose(-1, -2), s)
    p = torch.softmax((s * scaling).masked_fill(~causal, float("-inf")), -1)
    out = p @ rep(value) if old is None else (p * old) @ rep(vq) + (p * ~old) @ rep(value)
    return out.transpose(1, 2).contiguous(), None


def answers(tok) -> list[tuple[str, list[int], list[int]]]:
    out = []
    for (examples, source), kind in ((CHAT, "chat"), (MATH, "math")):
        rows = [json.loads(line) for line in open(source)]
        prompts = {r["id"]: r["prompt"] for r in rows} if kind == "chat" else \
            {f"gsm8k-file:{i}": r["question"] for i, r in enumerate(rows)}
        seen = set()
        for r in map(json.loads, open(examples)):
            if r["method"] == "base" and r["id"] not in seen and len(seen) < N:
                seen.add(r["id"])
                answer = tok(r["text"], add_special_tokens=False).input_ids[:LENGTH]
                out.append((kind, encode_prompt(tok, prompts[r["id"]]), answer))
    return out


def main() -> None:
    AttentionInterface.register("prompt_store_probe", attention)
    model, tok, _ = load_base()
    model.set_attn_implementation("prompt_store_probe")
    STATE["turn"] = rotation(model.config.hidden_size // model.config.num_attention_heads)
    rows: dict = {}
    for kind, prompt, answer in answers(tok):
        ids = torch.tensor([prompt + answer])
        p, t = len(prompt), ids.shape[1]
        first = p + WINDOW  # the first query with a stored slot (n = 61)
        with torch.no_grad():
            STATE["mask"] = None
            ref = torch.log_softmax(model(ids).logits[0, first:-1].float(), -1)
            for name, keep in SCHEMES.items():
                STATE["mask"] = stored_mask(t, p, keep)
                got = torch.log_softmax(model(ids).logits[0, first:-1].float(), -1)
                for key in ((name, "all"), (name, kind)):
                    r = rows.setdefault(key, [0, 0, 0.0, 0])
                    r[0] += int((got.argmax(-1) != ref.argmax(-1)).sum())
                    r[1] += got.shape[0]
                    r[2] += float((ref.exp() * (ref - got)).sum())
                    r[3] += p
    print(f"{N} chat + {N} GSM8K base greedy answers (<= {LENGTH} tokens) after their prompts")
    print("| scheme | answers | positions | greedy token changed | mean KL (nats) | mean prompt tokens |\n"
          "|---|---|---|---|---|---|")
    for (name, kind), (changed, n, kl, prompt) in sorted(rows.items(), key=lambda kv: kv[0][1] != "all"):
        count = 2 * N if kind == "all" else N
        print(f"| {name} | {kind} | {n} | {100 * changed / n:.2f}% | {kl / n:.5f} | {prompt / count:.0f} |")


if __name__ == "__main__":
    main()
