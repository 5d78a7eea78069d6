"""Per-step traces of verify mode with generous drafting, for a look at cost-aware draft lengths (draft_policy.py).

Lossless verify with the shipped default model, greedy, 128 new tokens, the stop head at a confidence of 1e-6 (so the
MSD always drafts its 3 tokens and records the stop head's 1 - p_stop before each), prompt lookup up to 10 tokens,
the 4096-token draft vocabulary; dev prompts 8..31 of chat and of GSM8K (the speed runs use 0..7). One record per
base forward: the prompt, whether lookup drafted, drafts, stop-head values, drafts kept, answer position.

    python experiments/2026-11-27-lean-engine/trace.py 8 32 experiments/2026-11-27-lean-engine/trace_dev8-32.json
"""

import json
import sys

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine import verify
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig


def main() -> None:
    lo, hi, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    verify_model = verify.on_base(model, reference)
    steps, current = [], [None]
    plain = verify.VerifyGeneration._verify

    def traced(self, cache, rows, drafts, earlier):
        before = [r.fed for r in rows]
        result = plain(self, cache, rows, drafts, earlier)
        for r, d, fed in zip(rows, drafts, before):
            steps.append(dict(prompt=current[0], lookup=d.looked_up, n=len(d.tokens),
                              pc=[round(x, 4) for x in d.p_continue], kept=r.accepted[-1], pos=fed - len(r.prompt_ids)))
        return result

    verify.VerifyGeneration._verify = traced
    prompts = category_prompts("chat", hi)[lo:hi] + category_prompts("math", hi)[lo:hi]
    for p in prompts:
        current[0] = p["id"]
        run = verify.VerifyGeneration(verify_model, tokenizer, [encode_prompt(tokenizer, p["prompt"])],
                                      DecodingConfig(max_new_tokens=128, confidence=1e-6),
                                      draft_vocab=model.draft_vocab, lookup=PromptLookup(tokens=10))
        with torch.inference_mode():
            run.run()
        print(p["id"], len(steps), file=sys.stderr)
    json.dump(steps, open(out, "w"))


if __name__ == "__main__":
    main()
