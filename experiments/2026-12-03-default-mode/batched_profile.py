"""Where batched verify_fold's time goes (reported only): the first 8 prompts of `batched/prompts.jsonl` decoded as
`generate --batch-size 8 --max-new-tokens 128` decodes them, once per mode (verify, then verify_fold with
`DEFAULT_FOLD`), each under cProfile after an untimed warm-up on 2 prompts; the top functions by their own time.

    .venv/bin/python experiments/2026-12-03-default-mode/batched_profile.py > experiments/2026-12-03-default-mode/batched/profile.txt
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import time
from pathlib import Path

import torch

from hamburger.core.loading import fold_model, load_model
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import model_ngrams
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.verify import VerifyGeneration, on_base

HERE = Path(__file__).resolve().parent


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    folding = parse_folding(DEFAULT_FOLD)
    models = {"verify": (on_base(model, reference), None), "verify_fold": (fold_model(None, folding, model), folding)}
    prompts = [json.loads(line)["prompt"] for line in (HERE / "batched/prompts.jsonl").read_text().splitlines()][:8]
    ids = [encode_prompt(tokenizer, p) for p in prompts]
    for name, (m, fold) in models.items():
        def run(rows):
            return VerifyGeneration(m, tokenizer, rows, [DecodingConfig(max_new_tokens=128)] * len(rows),
                                    draft_vocab=m.draft_vocab, fold=fold, lookup=PromptLookup(),
                                    ngrams=model_ngrams(m, None)).run()
        run(ids[:2])
        profile, start = cProfile.Profile(), time.perf_counter()
        profile.enable()
        results = run(ids)
        profile.disable()
        wall = time.perf_counter() - start
        tokens = sum(len(r.token_ids) for r in results)
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(18)
        print(f"## {name}: {tokens} tokens in {wall:.1f} s ({tokens / wall:.1f} tok/s, profiled)\n")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000] + "\n")


if __name__ == "__main__":
    main()
