"""Where in a 256-token GSM8K dev answer verify-fold's spikes sit, by folding: every verify-fold answer of the 256-token
GSM8K dev evals (`segments:32` and `segments:48` from experiments/2026-11-26-long-answers/, `segments:32:0.25` here)
and the base's sampled answers, teacher-forced under the unchanged base after the chat-templated prompt (the answer's
text re-tokenized): the tokens of NLL > 6 nats, counted by position in the answer (0-127: where `segments:32:0.25` is
`segments:32`; 128-255: where its window is 32-64), and each answer's worst token's position.

    python experiments/2026-11-26-growing-window/spikes.py > experiments/2026-11-26-growing-window/spikes.txt
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from hamburger.core.base import load_base
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.plausibility import token_nll
from hamburger.eval.run import gsm8k_examples

HERE = Path(__file__).resolve().parent
EVALS = {"segments:32": HERE.parent / "2026-11-26-long-answers/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k",
         "segments:48": HERE.parent / "2026-11-26-long-answers/eval-dev-default-segments-48-c0.3-p10-t256-gsm8k",
         "segments:32:0.25": HERE / "eval-dev-default-segments-32-0.25-c0.3-p10-t256-gsm8k"}
SPIKE = 6.0  # nats


def main() -> None:
    torch.set_num_threads(2)
    lm, tokenizer = load_base()[:2]
    questions = {e.id: e.prompt for e in gsm8k_examples(None, 20)}
    print(f"| answers | spikes > {SPIKE:g} nats at tokens 0-127 | at 128-255 | answers with one | worst token's "
          "position per answer |")
    print("|---|---|---|---|---|")
    for name, folder in EVALS.items():
        rows = [json.loads(line) for line in (folder / "examples.jsonl").read_text().splitlines()]
        methods = ["verify-fold"] + (["base-sampled"] if name == "segments:32" else [])
        for method in methods:
            early = late = answers = 0
            worst = []
            for r in (r for r in rows if r["method"] == method):
                ids = tokenizer(r["text"], add_special_tokens=False)["input_ids"]
                nll = token_nll(lm, encode_prompt(tokenizer, questions[r["id"]]), ids)
                spikes = [i for i, v in enumerate(nll) if v > SPIKE]
                early += sum(i < 128 for i in spikes)
                late += sum(i >= 128 for i in spikes)
                answers += bool(spikes)
                worst.append(max(range(len(nll)), key=nll.__getitem__))
            label = f"{method} {name}" if method == "verify-fold" else "base-sampled"
            print(f"| {label} | {early} | {late} | {answers}/20 | {' '.join(map(str, worst))} |")


if __name__ == "__main__":
    main()
