"""Where greedy lossless verify's decode time goes: cProfile of the default model as `generate` runs it (prompt
lookup, the n-gram table, the draft vocabulary) on 4 chat + 4 GSM8K dev prompts, 128 tokens, 2 threads; the
cumulative seconds of the step's parts, as shares of the decode.

    python experiments/2026-11-27-step-profile/profile_greedy.py \
        > experiments/2026-11-27-step-profile/profile_greedy_COMMIT.txt
"""

import cProfile
import io
import json
import pstats
import sys

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine import verify
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import model_ngrams
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig

PARTS = ["_draft", "_look_up", "_still_drafting", "decoder", "_draft_logits", "_draw_drafts", "_verify",
         "base_forward", "_accept", "_head_logits", "decode_logits", "_emit", "_close_group"]


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    verify_model = verify.on_base(model, reference)
    cfg = DecodingConfig(max_new_tokens=int(sys.argv[1]) if len(sys.argv) > 1 else 128)
    prompts = [encode_prompt(tokenizer, p["prompt"]) for c in ("chat", "math") for p in category_prompts(c, 4)]
    ngrams = model_ngrams(verify_model, None)

    def decode() -> tuple[int, int]:
        forwards = tokens = 0
        for ids in prompts:
            with torch.inference_mode():
                r = verify.VerifyGeneration(verify_model, tokenizer, [ids], cfg, draft_vocab=model.draft_vocab,
                                            lookup=PromptLookup(), ngrams=ngrams).run()[0]
            forwards, tokens = forwards + r.forwards, tokens + len(r.token_ids)
        return forwards, tokens

    decode()  # warm
    profile = cProfile.Profile()
    profile.enable()
    forwards, tokens = decode()
    profile.disable()
    stats = pstats.Stats(profile).stats
    total = max(ct for (_, _, _), (_, _, _, ct, _) in stats.items())
    print(json.dumps({"machine": machine_info(2, "float32")}))
    print(f"{total:.3f} s over {forwards} base forwards, {tokens} tokens ({1000 * total / forwards:.1f} ms per step)")
    for part in PARTS:
        found = [(ct, nc, file) for (file, _, func), (_, nc, _, ct, _) in stats.items() if func == part]
        for ct, nc, file in found:
            print(f"  {part:16} {file.split('hamburger/')[-1]:32} {nc:6} calls  {ct:7.3f} s  {100 * ct / total:5.1f}%"
                  f"  {1000 * ct / forwards:6.2f} ms per step")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
    print(out.getvalue())


if __name__ == "__main__":
    main()
