"""The base's greedy answers (token ids, 128 new tokens) to dev prompts, with the prompts' token ids: what a drafter
must predict. Lossless verify decodes them (its output is the base's greedy output token for token).

    python experiments/2026-11-27-draft-pricing/answers.py 8 64 experiments/2026-11-27-draft-pricing/answers_dev8-64.jsonl
    python experiments/2026-11-27-draft-pricing/answers.py 0 24 experiments/2026-11-27-draft-pricing/answers_code0-24.jsonl code

(the categories: chat and math unless a fourth argument lists others, comma-separated)
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
    with open(out, "w") as f:
        for category in sys.argv[4].split(",") if len(sys.argv) > 4 else ("chat", "math"):
            for p in category_prompts(category, hi)[lo:hi]:
                prompt_ids = encode_prompt(tokenizer, p["prompt"])
                run = verify.VerifyGeneration(verify_model, tokenizer, [prompt_ids], DecodingConfig(max_new_tokens=128),
                                              draft_vocab=model.draft_vocab, lookup=PromptLookup())
                with torch.inference_mode():
                    result = run.run()[0]
                f.write(json.dumps({"id": p["id"], "category": category, "prompt_ids": prompt_ids,
                                    "answer_ids": result.token_ids}) + "\n")
                f.flush()
                print(p["id"], result.tokens, file=sys.stderr)


if __name__ == "__main__":
    main()
