"""A training-free look beside run.sh: should the slot a folded group keeps weigh as much as the group's k tokens
(token merging's proportional attention: + c * ln k on that key's attention logits once the group folded)? The
default fold's layout (`keep first`, window 60, groups of up to 8 at sliding 0.7) and its `keep last` twin,
teacher-forced on the first 12 of the base's sampled 256-token answers to the long GSM8K dev prompts
(../2026-11-26-long-math-60/): KL(unfolded || folded) and its reverse per position, and spikes (the folded reading's
top token costs the unfolded base > 6 nats), for c in -0.5, 0 (the engine's boolean mask), 0.5 and 1.

    E=experiments/2026-11-27-growing-first; python $E/attention_bias.py > $E/attention_bias.txt
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from hamburger.core.loading import load_model
from hamburger.data.segment import log_softmax_entropy
from hamburger.engine.folding import FoldState, parse_folding
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.run import gsm8k_examples

ANSWERS = Path(__file__).resolve().parents[1] / \
    "2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60/examples.jsonl"
SPECS = ("segments:60:first:steps=8:p=0.7", "segments:60:last:steps=8:p=0.7")
SCALES = (-0.5, 0.0, 0.5, 1.0)
N_ANSWERS = 12


def forward(model, ids: list[int], mask: torch.Tensor) -> torch.Tensor:
    """Log-probabilities [n, V] of one uncached forward with a [n, n] mask (boolean, or additive float)."""
    n = len(ids)
    with torch.no_grad():
        final, _ = model.base_forward(model.embed(torch.tensor([ids])), torch.arange(n)[None], mask[None, None])
        return torch.log_softmax(model.lm_head(final[0]).float(), -1)


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer = load_model(None)[:2]
    vocab = model.base.config.vocab_size
    prompts = {e.id: e.prompt for e in gsm8k_examples(None, 60)}
    rows = [json.loads(line) for line in ANSWERS.read_text().splitlines()]
    rows = [r for r in rows if r["method"] == "base-sampled"][:N_ANSWERS]
    totals = {}
    for r in rows:
        answer = tokenizer(r["text"], add_special_tokens=False)["input_ids"]
        prompt = encode_prompt(tokenizer, prompts[r["id"]])
        ids, start = prompt + answer, len(prompt)
        n = len(ids)
        ref = forward(model, ids, torch.ones(n, n, dtype=torch.bool).tril())[start - 1:-1]
        entropies = log_softmax_entropy(ref)[1].tolist()
        for spec in SPECS:
            folding = parse_folding(spec)
            state = FoldState(folding, vocab)
            state.entropies = entropies
            dies = torch.full((n,), n + 1)  # the step a slot leaves the cache (answer token i is fed at step i + 1)
            kept = torch.zeros(n)  # ln k of the slot a folded group of k keeps ...
            kept_from = torch.full((n,), n + 1)  # ... from the step the group folds
            for i in range(len(answer) - 1):
                for s, e in state.due(i):
                    dies[[start + t for t in folding.leaving(s, e)]] = i + 1
                    slot = start + (e - 1 if folding.keep == "last" else s)
                    kept[slot], kept_from[slot] = math.log(e - s), i + 1
                state.fed(i, i + 1)
            born = torch.cat([torch.zeros(start, dtype=torch.long), torch.arange(1, len(answer) + 1)])
            sees = torch.ones(n, n, dtype=torch.bool).tril() & (dies[None, :] > born[:, None])
            weighted = born[:, None] >= kept_from[None, :]
            for c in SCALES:
                mask = sees if c == 0 else torch.where(sees, c * kept * weighted, torch.tensor(float("-inf")))
                got = forward(model, ids, mask)[start - 1:-1]
                t = totals.setdefault((spec, c), [0, 0.0, 0.0, 0])
                t[0] += len(got)
                t[1] += float((ref.exp() * (ref - got)).sum())
                t[2] += float((got.exp() * (got - ref)).sum())
                t[3] += int((-ref.gather(1, got.argmax(-1)[:, None]) > 6).sum())
    print(f"{N_ANSWERS} base-sampled answers, {totals[SPECS[0], 0.0][0]} positions\n")
    print("| fold | c (+ c ln k at the kept slot) | KL | reverse KL | spikes > 6 nats |")
    print("|---|---|---|---|---|")
    for (spec, c), (n, kl, rkl, spikes) in totals.items():
        print(f"| {spec} | {c:+.1f} | {kl / n:.4f} | {rkl / n:.4f} | {spikes} |")


if __name__ == "__main__":
    main()
