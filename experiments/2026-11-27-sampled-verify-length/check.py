"""Is lossless sampled verify's answer length the base's? Sampled long-math evals showed lossless verify's sampled
answers longer than the base's own samples (188-199 tokens against 175-179 on 60 GSM8K prompts at 256 tokens, two
runs; per-prompt z 2.8), which speculative sampling (`verify.speculative_accept`) must not cause. Here one prompt (a
text, or a GSM8K dev id such as gsm8k:7469) is answered N times by plain sampling (`Generation` on the unchanged base)
and by sampled verify mode as `eval --verify` drafts (the MSD by the stop head, prompt lookup; T 0.7, top-p 0.9),
seeds 0..N-1 in batches of 50; the answer lengths are compared (two-sample z of the means) and so is the share that
reaches max_new_tokens (two-proportion z).

    python experiments/2026-11-27-sampled-verify-length/check.py "Name three colours." 1000 96 > OUT.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.loading import load_model
from hamburger.engine.generate import Generation
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import model_ngrams
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base
from hamburger.eval.run import gsm8k_examples

BATCH = 50


def main() -> None:
    prompt, n, max_new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if prompt.startswith("gsm8k:"):
        prompt = next(e.prompt for e in gsm8k_examples(None, 500) if e.id == prompt)
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, "float32", None, True, "cpu")
    ids = encode_prompt(tokenizer, prompt)
    drafter = on_base(model, reference)
    lookup, ngrams = PromptLookup(tokens=10).validate(), model_ngrams(model, None)
    out = {"prompt": prompt, "samples": n, "max_new_tokens": max_new, "temperature": 0.7, "top_p": 0.9,
           "machine": machine_info(2, "float32"), "methods": {}}
    for name in ("plain", "verify"):
        lengths, start = [], time.time()
        for s in range(0, n, BATCH):
            cfgs = [DecodingConfig(max_new_tokens=max_new, temperature=0.7, top_p=0.9, seed=s + i)
                    for i in range(BATCH)]
            if name == "plain":
                gen = Generation(reference, tokenizer, [ids] * BATCH, cfgs)
            else:
                gen = VerifyGeneration(drafter, tokenizer, [ids] * BATCH, cfgs, lookup=lookup, ngrams=ngrams,
                                       draft_vocab=model.draft_vocab)
            lengths += [r.tokens for r in gen.run()]
        out["methods"][name] = {"lengths": lengths, "mean": statistics.mean(lengths),
                                "sd": statistics.stdev(lengths), "full": sum(t >= max_new for t in lengths),
                                "seconds": time.time() - start}
    a, b = out["methods"]["plain"]["lengths"], out["methods"]["verify"]["lengths"]
    diff = statistics.mean(b) - statistics.mean(a)
    se = (statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5
    full = [out["methods"][m]["full"] / n for m in ("plain", "verify")]
    pooled = sum(full) / 2
    se_full = (pooled * (1 - pooled) * 2 / n) ** 0.5
    out["verify_minus_plain"] = {"mean_length": diff, "se": se, "z": diff / se, "full_share": full[1] - full[0],
                                 "full_z": (full[1] - full[0]) / se_full if se_full else 0.0}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
