"""Speed and bytes (README, check 3): HF `generate`, the default fold as the library now reads its store (one table
lookup per 4-bit pair, keys times their scale, stored slots written into spare ones), the same fold read as session
54 read it (`legacy_read`: session 54's `dequantize` and a store copied whole at every store) and the candidate
(`CANDIDATE`, the prompt stored too), interleaved as `hamburger bench` runs methods (`measure`: warm-up, repetitions
round the methods, the median kept): greedy, batch 1, one prompt per bench category, 256 tokens, 3 repetitions.

    python experiments/2026-11-29-prompt-store/speed.py > experiments/2026-11-29-prompt-store/speed.json
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from dataclasses import asdict

import torch
from tqdm import tqdm

from hamburger.bench.machine import machine_info
from hamburger.bench.methods import HFMethod, VerifyMethod
from hamburger.bench.run import BenchSettings, bench_prompts, measure, summarise
from hamburger.core.loading import fold_model, load_model
from hamburger.engine import quantized
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt

CANDIDATE = DEFAULT_FOLD + ":prompt=4"


def session54_dequantize(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """`quantized.dequantize` as session 54 wrote it (the same values, more ops)."""
    if values.dtype == torch.uint8:
        values = torch.stack([values & 15, values >> 4], -1).reshape(*values.shape[:-1], -1).to(scales.dtype) - 8
    d, groups = values.shape[-1], scales.shape[-1]
    grouped = values.to(scales.dtype).reshape(*values.shape[:-1], groups, d // groups)
    return (grouped * scales[..., None]).reshape(values.shape)


@contextmanager
def legacy_read():
    """Session 54's store: its read, and no spare slots (every store copies the whole store into a new one)."""
    saved = quantized.dequantize, quantized.SPARE_SLOTS
    quantized.dequantize, quantized.SPARE_SLOTS = session54_dequantize, 0
    try:
        yield
    finally:
        quantized.dequantize, quantized.SPARE_SLOTS = saved


class Legacy:
    """A method run under `legacy_read`."""

    def __init__(self, method, name: str):
        self.method, self.name = method, name

    def run(self, *args, **kwargs):
        with legacy_read():
            return self.method.run(*args, **kwargs)


def main() -> None:
    torch.set_num_threads(2)
    settings = BenchSettings(n_prompts=1, max_new_tokens=256, repeats=3, methods=[])
    model, tokenizer, _, reference = load_model(None, reference=True)
    common = dict(draft_vocab=model.draft_vocab, lookup=PromptLookup(), ngrams=model.draft_ngrams)

    def verify(name, spec):
        folding = parse_folding(spec)
        return VerifyMethod(fold_model(None, folding, model), tokenizer, name=name, fold=folding, **common)
    methods = [HFMethod(reference.base, tokenizer), verify("verify_fold", DEFAULT_FOLD),
               Legacy(verify("verify_fold", DEFAULT_FOLD), "verify_fold+session54_read"),
               verify("verify_fold+prompt4", CANDIDATE)]
    prompts = bench_prompts(settings)
    ids = [encode_prompt(tokenizer, p["prompt"]) for p in prompts]
    with tqdm(total=len(prompts) * len(methods), unit="run", file=sys.stderr) as progress:
        rows = measure(methods, prompts, ids, settings, progress)
    weights = sum(p.numel() * p.element_size() for p in model.base.parameters())
    print(json.dumps({"machine": machine_info(2, "float32", "cpu"), "settings": asdict(settings),
                      "folds": {"verify_fold": DEFAULT_FOLD, "verify_fold+prompt4": CANDIDATE},
                      "summary": summarise(rows, weights), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
