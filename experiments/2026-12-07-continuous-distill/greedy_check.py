"""On the real base: are `answers.answers`' greedy answers HF `generate`'s? The first PROMPTS training prompts, chat
formatted, decoded by `answers` in batches of BATCH whose rows leave and join (refill every REFILL forwards) and by
HF `generate` one prompt at a time, both greedy with every EOS id. In float64 the tests require equality; in float32
or bf16 other arithmetic (another batch's padding, the lean pass's grouped attention over a padded cache) may move a
near-tie. Prints, per prompt, equal or where the two first differ.

    python experiments/2026-12-07-continuous-distill/greedy_check.py --dtype float32 > \
        experiments/2026-12-07-continuous-distill/greedy-check-float32.txt
"""

from __future__ import annotations

import argparse
import json

import torch

import hamburger  # noqa: F401  (its MKL setting)
from hamburger.core.base import load_base
from hamburger.data.answers import Request, answers
from hamburger.engine.prompt import chat_prompt_ids, eos_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", default="data/prompts/train-all.jsonl", help="prompt jsonl ('prompt' field)")
    parser.add_argument("--count", type=int, default=16, help="how many of its first prompts")
    parser.add_argument("--dtype", default="float32", help="the base's dtype")
    parser.add_argument("--max-new-tokens", type=int, default=96, help="answer tokens at most")
    parser.add_argument("--batch", type=int, default=4, help="rows decoded together")
    parser.add_argument("--refill", type=int, default=8, help="forwards between refills")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tok, _ = load_base(None, args.dtype)
    eos = eos_ids(model, tok, required=True)
    with open(args.prompts) as f:
        records = [json.loads(line) for _, line in zip(range(args.count), f)]
    prompts = [chat_prompt_ids(tok, r["prompt"]) for r in records]
    got = {a.key: a.tokens for done in answers(model, [Request(i, p) for i, p in enumerate(prompts)], eos,
                                               args.max_new_tokens, args.batch, args.refill) for a in done}
    print(f"torch {torch.__version__}, {args.dtype}, {args.threads} threads, {len(prompts)} prompts, "
          f"{args.max_new_tokens} new tokens, batch {args.batch}, refill every {args.refill}")
    same = 0
    for i, p in enumerate(prompts):
        with torch.inference_mode():
            ref = model.generate(torch.tensor([p]), max_new_tokens=args.max_new_tokens, do_sample=False,
                                 eos_token_id=eos, pad_token_id=eos[0])[0, len(p):].tolist()
        ref = next((ref[:j] for j, t in enumerate(ref) if t in eos), ref)
        first = next((j for j, (a, b) in enumerate(zip(got[i], ref)) if a != b), None)
        if first is None and len(got[i]) == len(ref):
            same += 1
            print(f"{records[i]['id']}: equal ({len(ref)} tokens)")
        else:
            first = min(len(got[i]), len(ref)) if first is None else first
            print(f"{records[i]['id']}: first differs at token {first} of {len(ref)} (HF) / {len(got[i])}")
    print(f"{same} of {len(prompts)} answers equal HF generate's")


if __name__ == "__main__":
    main()
