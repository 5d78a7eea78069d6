"""Teacher-forced: what storing the prompt from the answer's first token on would cost, beside the default fold
(`DEFAULT_FOLD`, `prompt=4`: the prompt's slots but its first 4 are stored once the answer's first are, 60 tokens in).

Session 55's probe (`../2026-11-29-prompt-store/tf_probe.py`, its answers, store and attention reused): the base's own
greedy answers (256 tokens) to 16 chat dev prompts and 16 dev GSM8K rows, after their chat-templated prompts, run
through the base once exactly and once per scheme. The schemes:
  * the default: answer slots older than the window (60 tokens, or 45% of the answer's) stored, and from then on the
    prompt's but its first 4;
  * early: the same, but the prompt's slots but its first 4 are stored from the answer's second token on (the first
    comes from the prefill's exact cache).
Over the answer positions before the window (only the early scheme stores anything there) and after it: the share
whose greedy token differs from the exact run's and the mean KL(exact || scheme).

    .venv/bin/python experiments/2026-12-03-early-prompt/tf_probe.py > experiments/2026-12-03-early-prompt/tf_probe.txt
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from transformers import AttentionInterface

from hamburger.core.base import load_base
from hamburger.engine.quantized import rotation

_spec = importlib.util.spec_from_file_location(
    "probe_55", Path(__file__).resolve().parents[1] / "2026-11-29-prompt-store/tf_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)
KEEP_FIRST = 4


def early_mask(t: int, prompt: int) -> torch.Tensor:
    """[t, t] bool: the default's stored slots, and the prompt's but its first 4 for every query after the prompt."""
    pos = torch.arange(t)
    prompt_slots = (pos[None, :] < prompt) & (pos[None, :] >= KEEP_FIRST) & (pos >= prompt)[:, None]
    return probe.stored_mask(t, prompt, KEEP_FIRST) | prompt_slots


def main() -> None:
    AttentionInterface.register("early_prompt_probe", probe.attention)
    model, tok, _ = load_base()
    model.set_attn_implementation("early_prompt_probe")
    probe.STATE["turn"] = rotation(model.config.hidden_size // model.config.num_attention_heads)
    schemes = {"the default (prompt=4)": lambda t, p: probe.stored_mask(t, p, KEEP_FIRST), "early": early_mask}
    rows: dict = {}
    for kind, prompt, answer in probe.answers(tok):
        ids = torch.tensor([prompt + answer])
        p, t = len(prompt), ids.shape[1]
        with torch.no_grad():
            probe.STATE["mask"] = None
            ref = torch.log_softmax(model(ids).logits[0, p - 1:-1].float(), -1)  # predicting answer token j at p-1+j
            for name, mask in schemes.items():
                probe.STATE["mask"] = mask(t, p)
                got = torch.log_softmax(model(ids).logits[0, p - 1:-1].float(), -1)
                changed = got.argmax(-1) != ref.argmax(-1)
                kl = (ref.exp() * (ref - got)).sum(-1)
                for part, span in (("before the window", slice(0, probe.WINDOW + 1)),
                                   ("after it", slice(probe.WINDOW + 1, None))):
                    for key in ((name, part, "all"), (name, part, kind)):
                        r = rows.setdefault(key, [0, 0, 0.0])
                        r[0] += int(changed[span].sum())
                        r[1] += int(changed[span].numel())
                        r[2] += float(kl[span].sum())
    print(f"{probe.N} chat + {probe.N} GSM8K base greedy answers (<= {probe.LENGTH} tokens) after their prompts")
    print("| scheme | answer positions | answers | positions | greedy token changed | mean KL (nats) |\n"
          "|---|---|---|---|---|---|")
    for (name, part, kind), (changed, n, kl) in sorted(rows.items(), key=lambda kv: (kv[0][2] != "all", kv[0][1])):
        print(f"| {name} | {part} | {kind} | {n} | {100 * changed / max(1, n):.2f}% | {kl / max(1, n):.5f} |")


if __name__ == "__main__":
    main()
