"""cProfile of sampled lossless verify (T 0.7, top-p 0.9, seed 0) on 4 chat dev prompts, 128 tokens, 2 threads, the
default model as `generate` runs it, with the old draw (`torch.multinomial`, as `ab.py` puts it back) and with
`sampling.sample`: total decode seconds, base forwards, and the seconds spent drawing.

    python experiments/2026-11-27-fast-draw/profile_sampled.py > experiments/2026-11-27-fast-draw/profile_sampled.txt
"""

import cProfile
import pstats
import sys
from pathlib import Path

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine import sampling, verify
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig

sys.path.insert(0, str(Path(__file__).parent))
from ab import draw, multinomial_sample  # noqa: E402


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    verify_model = verify.on_base(model, reference)
    cfg = DecodingConfig(max_new_tokens=128, temperature=0.7, top_p=0.9, seed=0)
    prompts = [encode_prompt(tokenizer, p["prompt"]) for p in category_prompts("chat", 4)]

    def decode() -> int:
        forwards = 0
        for ids in prompts:
            with torch.inference_mode():
                forwards += verify.VerifyGeneration(verify_model, tokenizer, [ids], cfg, draft_vocab=model.draft_vocab,
                                                    lookup=PromptLookup()).run()[0].forwards
        return forwards

    for name, fn in (("multinomial", multinomial_sample), ("inverse_cdf", sampling.sample)):
        with draw(fn):
            decode()  # warm
            profile = cProfile.Profile()
            profile.enable()
            forwards = decode()
            profile.disable()
        stats = pstats.Stats(profile).stats
        total = max(ct for (_, _, _), (_, _, _, ct, _) in stats.items())
        drawing = sum(ct for (file, _, func), (_, _, _, ct, _) in stats.items() if func == fn.__name__)
        calls = sum(nc for (file, _, func), (_, nc, _, _, _) in stats.items() if func == fn.__name__)
        print(f"{name}: {total:.3f} s over {forwards} base forwards; {calls} draws, {drawing:.3f} s drawing "
              f"({100 * drawing / total:.1f}%)")


if __name__ == "__main__":
    main()
