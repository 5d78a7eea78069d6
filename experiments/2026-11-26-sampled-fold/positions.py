"""Where sampled verify_fold's long GSM8K answers lose likelihood: for every answer of step 2 (60 GSM8K dev prompts, 256
new tokens, eval-dev-t256-gsm8k-l60/examples.jsonl), each token's NLL under the unchanged base, teacher-forced after
the chat-templated prompt (the answer's text re-tokenized), pooled by the token's position in the answer. With the
default folding (window 60) nothing is folded before position 60, so there verify_fold samples from exactly the base's
distribution; from about position 68 on (a 60-token window after a group of up to 8) it reads folded history.

    python experiments/2026-11-26-sampled-fold/positions.py > experiments/2026-11-26-sampled-fold/positions.txt
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from hamburger.core.base import load_base
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.plausibility import token_nll
from hamburger.eval.run import gsm8k_examples

EVAL = Path(__file__).resolve().parent / "eval-dev-t256-gsm8k-l60"
BUCKETS = ((0, 60), (60, 128), (128, 192), (192, 256))
SPIKE = 6.0  # nats: a token the base gives < 0.25%


def main() -> None:
    torch.set_num_threads(2)
    lm, tokenizer = load_base()[:2]
    questions = {e.id: e.prompt for e in gsm8k_examples(None, 60)}
    by_method: dict[str, list[list[float]]] = {}
    for line in (EVAL / "examples.jsonl").read_text().splitlines():
        r = json.loads(line)
        ids = tokenizer(r["text"], add_special_tokens=False)["input_ids"]
        by_method.setdefault(r["method"], []).append(token_nll(lm, encode_prompt(tokenizer, questions[r["id"]]), ids))
    print("Mean NLL per token under the base by the token's position in the answer (tokens in the bucket), and the")
    print(f"tokens above {SPIKE:g} nats; eval {EVAL.name}, re-tokenized text.\n")
    print("| method | " + " | ".join(f"positions {a}-{b - 1}" for a, b in BUCKETS) + " | spikes before 60 | spikes "
          "from 60 |")
    print("|---|" + "---|" * (len(BUCKETS) + 2))
    for method, answers in by_method.items():
        cells = []
        for a, b in BUCKETS:
            values = [x for nll in answers for x in nll[a:b]]
            cells.append(f"{sum(values) / max(1, len(values)):.3f} ({len(values)})")
        early = sum(x > SPIKE for nll in answers for x in nll[:60])
        late = sum(x > SPIKE for nll in answers for x in nll[60:])
        print(f"| {method} | " + " | ".join(cells) + f" | {early} | {late} |")


if __name__ == "__main__":
    main()
