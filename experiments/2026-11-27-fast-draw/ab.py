"""Sampled decoding with the old draw (`torch.multinomial`) against the inverse-CDF draw `sampling.sample` has since
session 36, in one run: HF `generate` (sampled; its own draw) for reference, then lossless verify and verify_fold as
`generate` runs them (stop head 0.3, prompt lookup, draft vocabulary; sampled rows never draft from the n-gram table)
with each draw, interleaved prompt by prompt on 8 chat + 8 GSM8K dev prompts (0..7), 128 new tokens, temperature 0.7,
top-p 0.9, seed 0 on every prompt, batch 1, fp32, 2 threads. The old draw is put back by replacing `sample` where the
engine imported it (the experiment's only use of patching). One JSON line per prompt and method; the first line
records the machine.

    python experiments/2026-11-27-fast-draw/ab.py experiments/2026-11-27-fast-draw/ab.jsonl
"""

import json
import sys
from contextlib import contextmanager

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.methods import HFMethod, VerifyMethod
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine import generate, sampling, verify
from hamburger.engine.folding import READER_FOLD as DEFAULT_FOLD, parse_folding  # (the default when this ran)
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt

SAMPLED = dict(temperature=0.7, top_p=0.9)
MODULES = [m for m in (sampling, verify, generate) if hasattr(m, "sample")]


def multinomial_sample(probs, generator):
    """The draw before session 36."""
    if generator is not None and probs.device != generator.device:
        probs = probs.to(generator.device)
    return int(torch.multinomial(probs, 1, generator=generator))


@contextmanager
def draw(fn):
    saved = [m.sample for m in MODULES]
    for m in MODULES:
        m.sample = fn
    try:
        yield
    finally:
        for m, f in zip(MODULES, saved):
            m.sample = f


def main() -> None:
    out = sys.argv[1]
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    verify_model = verify.on_base(model, reference)
    kw = dict(confidence=0.3, draft_vocab=model.draft_vocab, lookup=PromptLookup(), sampling=SAMPLED)
    methods = [("hf_generate", HFMethod(reference.base, tokenizer, sampling=SAMPLED), None)]
    for name, fn in (("multinomial", multinomial_sample), ("inverse_cdf", sampling.sample)):
        methods.append((f"verify/{name}", VerifyMethod(verify_model, tokenizer, **kw), fn))
        methods.append((f"verify_fold/{name}", VerifyMethod(model, tokenizer, fold=parse_folding(DEFAULT_FOLD), **kw),
                        fn))
    with open(out, "w") as f:
        f.write(json.dumps({"machine": machine_info(2, "float32"), "sampling": SAMPLED}) + "\n")
        for p in category_prompts("chat", 8) + category_prompts("math", 8):
            ids = encode_prompt(tokenizer, p["prompt"])
            for name, method, fn in methods:
                with torch.inference_mode(), (draw(fn) if fn else draw(sampling.sample)):
                    m = method.run(ids, 128)
                f.write(json.dumps({"id": p["id"], "category": p["category"], "method": name, "tokens": m.tokens,
                                    "first_tokens": m.first_tokens, "forwards": m.forwards,
                                    "decode_s": round(m.decode_s, 4), "token_ids": m.token_ids}) + "\n")
                f.flush()
            print(p["id"], file=sys.stderr)


if __name__ == "__main__":
    main()
