"""Where the default fold's sampled answers hold unlikely tokens: each sampled answer to the 120 long GSM8K dev
prompts (rows 0-59: ../2026-11-26-sampled-fold/, rows 60-119: ../2026-11-27-gpu-fold-reverse/; the base's own sampled
answers and the default fold's), re-scored token by token under the unchanged base with every token in its own slot;
tokens the base gives > 4 and > 6 nats, counted by position. A look that chose what run.sh runs (README.md).

    python experiments/2026-11-27-growing-first/positions.py > experiments/2026-11-27-growing-first/positions.txt
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from hamburger.core.loading import load_model
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.run import gsm8k_examples

ROOT = Path(__file__).resolve().parents[2]
SETS = [(ROOT / "experiments/2026-11-26-sampled-fold/eval-dev-t256-gsm8k-l60", None),
        (ROOT / "experiments/2026-11-27-gpu-fold-reverse/eval-t256-gsm8k-more-default",
         "experiments/2026-11-27-gpu-fold-reverse/gsm8k_dev_60_120.jsonl")]
METHODS = ("base-sampled", "verify-fold-sampled")
BUCKET = 64


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer = load_model(None)[:2]
    counts = {m: {} for m in METHODS}  # method -> bucket -> [tokens, > 4 nats, > 6 nats]
    for folder, gsm8k_file in SETS:
        prompts = {e.id: e.prompt for e in gsm8k_examples(gsm8k_file and str(ROOT / gsm8k_file), 60)}
        for line in (folder / "examples.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r["method"] not in METHODS:
                continue
            answer = tokenizer(r["text"], add_special_tokens=False)["input_ids"]
            prompt = encode_prompt(tokenizer, prompts[r["id"]])
            n = len(prompt) + len(answer)
            with torch.no_grad():
                final, _ = model.base_forward(model.embed(torch.tensor([prompt + answer])), torch.arange(n)[None],
                                              torch.ones(n, n, dtype=torch.bool).tril()[None, None])
                logp = torch.log_softmax(model.lm_head(final[0, len(prompt) - 1:-1]).float(), -1)
            nll = -logp.gather(1, torch.tensor(answer)[:, None])[:, 0]
            for i, x in enumerate(nll.tolist()):
                c = counts[r["method"]].setdefault(i // BUCKET, [0, 0, 0])
                c[0] += 1
                c[1] += x > 4
                c[2] += x > 6
    print("| answer positions | " + " | ".join(f"{m}: tokens, > 4 nats, > 6 nats" for m in METHODS) + " |")
    print("|---|" + "---|" * len(METHODS))
    for b in sorted(set().union(*(c.keys() for c in counts.values()))):
        cells = [counts[m].get(b, [0, 0, 0]) for m in METHODS]
        print(f"| {b * BUCKET}-{(b + 1) * BUCKET - 1} | " + " | ".join(
            f"{t}, {a} ({100 * a / max(1, t):.2f}%), {s}" for t, a, s in cells) + " |")


if __name__ == "__main__":
    main()
