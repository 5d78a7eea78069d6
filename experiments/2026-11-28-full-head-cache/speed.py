"""Decode speed and KV of greedy verify_fold with the library's full heads, beside the plain fold and HF `generate`,
interleaved as `hamburger bench` runs methods (its `measure`: warm-up, repetitions round the methods, the median
kept). The default model, its default fold, 2 prompts per bench category, 256 tokens, 3 repetitions.

    python experiments/2026-11-28-full-head-cache/speed.py > experiments/2026-11-28-full-head-cache/speed.json
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import torch
from tqdm import tqdm

from hamburger.bench.machine import machine_info
from hamburger.bench.methods import HFMethod, VerifyMethod
from hamburger.bench.run import BenchSettings, bench_prompts, measure, summarise
from hamburger.core.loading import fold_model, load_model
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    torch.set_num_threads(2)
    settings = BenchSettings(n_prompts=2, max_new_tokens=256, repeats=3, methods=[])
    heads = json.loads(subprocess.check_output(
        [sys.executable, str(ROOT / "experiments/2026-11-28-full-heads/chosen.py"), "4"], text=True))
    model, tokenizer, _, reference = load_model(None, reference=True)
    folding = parse_folding(DEFAULT_FOLD)
    runner = fold_model(None, folding, model)
    common = dict(fold=folding, draft_vocab=model.draft_vocab, lookup=PromptLookup(), ngrams=model.draft_ngrams)
    methods = [HFMethod(reference.base, tokenizer),
               VerifyMethod(runner, tokenizer, name="verify_fold", full_heads=[], **common),
               VerifyMethod(runner, tokenizer, name="verify_fold+fh4", full_heads=heads, **common)]
    prompts = bench_prompts(settings)
    ids = [encode_prompt(tokenizer, p["prompt"]) for p in prompts]
    with tqdm(total=len(prompts) * len(methods), unit="run", file=sys.stderr) as progress:
        rows = measure(methods, prompts, ids, settings, progress)
    weights = sum(p.numel() * p.element_size() for p in model.base.parameters())
    print(json.dumps({"machine": machine_info(2, "float32", "cpu"), "settings": asdict(settings), "heads": heads,
                      "fold": DEFAULT_FOLD, "summary": summarise(rows, weights), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
