"""Lossless verify with and without n-gram drafts, in the real engine: the shipped default model, greedy, 128 new
tokens, prompt lookup up to 10, the 4096-token draft vocabulary, batch 1, 2 threads; arms interleaved prompt by prompt
on chat and GSM8K dev prompts LO..HI (the speed runs use 0..7). Each arm's n-gram table is counted over the
distilled training answers (data/distilled). One JSON line per prompt and arm: tokens, forwards, steps drafted by
lookup (prompt or table) and by the MSD, drafts kept, decode seconds; the first line records the machine.

    python experiments/2026-11-27-draft-pricing/engine_ab.py 8 32 experiments/2026-11-27-draft-pricing/engine_ab_dev8-32.jsonl
"""

import json
import sys

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.data.io import read_jsonl
from hamburger.engine import verify
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import NgramDrafts
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig

DISTILLED = "data/distilled/smollm2-135m-instruct.train.jsonl.gz"
# arm -> (the table's orders, min_count, min_share, whether it drafts before the MSD or where the stop head would not)
ARMS = {"lookup": None, "ngrams-2-0.5": ((3, 2), 2, 0.5, "before_msd"), "ngrams-3-0.6": ((3, 2), 3, 0.6, "before_msd"),
        "ngrams-2-0.5-after": ((3, 2), 2, 0.5, "after_msd")}


def main() -> None:
    lo, hi, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    verify_model = verify.on_base(model, reference)
    answers = [r["response_token_ids"] for r in read_jsonl(DISTILLED)]
    vocab = model.base.get_output_embeddings().weight.shape[0]
    tables = {name: s and NgramDrafts.count(answers, vocab, *s[:3]) for name, s in ARMS.items()}
    with open(out, "w") as f:
        f.write(json.dumps({"machine": machine_info(2, "float32"), "arms": ARMS}) + "\n")
        for p in category_prompts("chat", hi)[lo:hi] + category_prompts("math", hi)[lo:hi]:
            ids = encode_prompt(tokenizer, p["prompt"])
            for name, table in tables.items():
                run = verify.VerifyGeneration(verify_model, tokenizer, [ids], DecodingConfig(max_new_tokens=128),
                                              draft_vocab=model.draft_vocab, lookup=PromptLookup(), ngrams=table)
                if table:
                    run.ngram_order = ARMS[name][3]
                with torch.inference_mode():
                    r = run.run()[0]
                looked = [k for k, up in zip(r.accepted, r.looked_up) if up]
                msd = [k for k, up, d in zip(r.accepted, r.looked_up, r.drafts) if not up and d]
                f.write(json.dumps({"id": p["id"], "arm": name, "tokens": r.tokens, "forwards": r.forwards,
                                    "lookup_steps": len(looked), "lookup_kept": sum(looked), "msd_steps": len(msd),
                                    "msd_kept": sum(msd), "decode_s": round(r.decode_s, 4),
                                    "token_ids": r.token_ids}) + "\n")
                f.flush()
            print(p["id"], file=sys.stderr)


if __name__ == "__main__":
    main()
