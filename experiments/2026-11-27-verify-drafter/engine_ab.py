"""Lossless verify with the model's own MSD against a verify drafter (`drafter.py train`), in the real engine: the
shipped default model, 128 new tokens, prompt lookup up to 10, the checkpoint's 4096-token draft vocabulary, batch 1,
2 threads; arms interleaved prompt by prompt on chat and GSM8K dev prompts LO..HI (the speed runs use 0..7). Greedy
arms with and without the n-gram table; SAMPLE=1 runs sampled arms instead (T 0.7, top-p 0.9, seed 0 per prompt; no
table, which sampled rows never use). One JSON line per prompt and arm: tokens, forwards, steps drafted by lookup and
by the MSD, drafts kept, decode seconds; the first line records the machine.

    python engine_ab.py DRAFTER.safetensors 8 32 OUT.jsonl
"""

import json
import os
import sys

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.checkpoint import load_verify_drafter
from hamburger.core.loading import load_model
from hamburger.core.modules import Drafter
from hamburger.engine import verify
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig


def main() -> None:
    path, lo, hi, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    sample = bool(os.environ.get("SAMPLE"))
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    verify_model = verify.on_base(model, reference)
    trained = load_verify_drafter(path, verify_model)
    own = Drafter.of(verify_model)
    arms = {"own": (own, None), "drafter": (trained, None)} if sample else {
        "own+table": (own, verify_model.draft_ngrams), "drafter+table": (trained, verify_model.draft_ngrams),
        "own": (own, None), "drafter": (trained, None)}
    sampling = dict(temperature=0.7, top_p=0.9, seed=0) if sample else {}
    with open(out, "w") as f:
        f.write(json.dumps({"machine": machine_info(2, "float32"), "drafter": path, "sample": sample}) + "\n")
        for p in category_prompts("chat", hi)[lo:hi] + category_prompts("math", hi)[lo:hi]:
            ids = encode_prompt(tokenizer, p["prompt"])
            for name, (drafter, table) in arms.items():
                run = verify.VerifyGeneration(verify_model, tokenizer, [ids],
                                              DecodingConfig(max_new_tokens=128, **sampling),
                                              draft_vocab=model.draft_vocab, lookup=PromptLookup(), ngrams=table,
                                              drafter=drafter)
                with torch.inference_mode():
                    r = run.run()[0]
                looked = [k for k, up in zip(r.accepted, r.looked_up) if up]
                msd = [(k, d) for k, up, d in zip(r.accepted, r.looked_up, r.drafts) if not up and d]
                f.write(json.dumps({"id": p["id"], "arm": name, "tokens": r.tokens, "forwards": r.forwards,
                                    "lookup_steps": len(looked), "lookup_kept": sum(looked), "msd_steps": len(msd),
                                    "msd_drafted": sum(d for _, d in msd), "msd_kept": sum(k for k, _ in msd),
                                    "decode_s": round(r.decode_s, 4), "token_ids": r.token_ids}) + "\n")
                f.flush()
            print(p["id"], file=sys.stderr)


if __name__ == "__main__":
    main()
