"""Decode speed and measured KV of greedy verify mode with a stored history (`--fold segments:60:0.45:none:bits=4` and
`bits=8`: the answer's tokens older than the default fold's window kept at 4 or 8 bits), beside the shipped verify_fold
(default fold, its four full heads) and HF `generate`, interleaved as `hamburger bench` runs methods (its `measure`:
warm-up, repetitions round the methods, the median kept). The default model, 1 prompt per bench category, 128
tokens, 3 repetitions.

    python experiments/2026-11-29-quantized-history/speed.py > experiments/2026-11-29-quantized-history/speed.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import torch
from tqdm import tqdm

from hamburger.bench.machine import machine_info
from hamburger.bench.methods import HFMethod, VerifyMethod
from hamburger.bench.run import BenchSettings, bench_prompts, measure, summarise
from hamburger.core.loading import fold_model, load_model
from hamburger.engine.folding import READER_FOLD as DEFAULT_FOLD, parse_folding  # (the default when this ran)
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt

STORED = {"verify_fold+int4": "segments:60:0.45:none:bits=4", "verify_fold+int8": "segments:60:0.45:none:bits=8"}


def main() -> None:
    torch.set_num_threads(2)
    settings = BenchSettings(n_prompts=1, max_new_tokens=128, repeats=3, methods=[])
    model, tokenizer, _, reference = load_model(None, reference=True)
    common = dict(draft_vocab=model.draft_vocab, lookup=PromptLookup(), ngrams=model.draft_ngrams)
    methods = [HFMethod(reference.base, tokenizer)]
    for name, spec in {"verify_fold": DEFAULT_FOLD, **STORED}.items():
        folding = parse_folding(spec)
        methods.append(VerifyMethod(fold_model(None, folding, model), tokenizer, name=name, fold=folding, **common))
    prompts = bench_prompts(settings)
    ids = [encode_prompt(tokenizer, p["prompt"]) for p in prompts]
    with tqdm(total=len(prompts) * len(methods), unit="run", file=sys.stderr) as progress:
        rows = measure(methods, prompts, ids, settings, progress)
    weights = sum(p.numel() * p.element_size() for p in model.base.parameters())
    print(json.dumps({"machine": machine_info(2, "float32", "cpu"), "settings": asdict(settings),
                      "folds": {"verify_fold": DEFAULT_FOLD, **STORED},
                      "summary": summarise(rows, weights), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
