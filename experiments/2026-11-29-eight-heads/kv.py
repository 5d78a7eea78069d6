"""Rule 3 of README: the answers' KV of greedy verify_fold (the default model, its default fold) with no full heads,
the four shipped ones (fh4) and the eight best-scored (fh8), on the bench's prompts (4 per category), at 128 and 256
new tokens. The answers' KV is the cache's measured bytes written for generated tokens (the bench's
`output_kv_bytes`) over what the base's cache holds for as many tokens (one whole slot each); pooled over prompts.
One run per prompt: the cache's bytes do not depend on timing.

    python experiments/2026-11-29-eight-heads/kv.py > experiments/2026-11-29-eight-heads/kv.json
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from hamburger.bench.machine import machine_info
from hamburger.bench.methods import VerifyMethod
from hamburger.bench.run import BenchSettings, bench_prompts, measure
from hamburger.core.loading import fold_model, load_model
from hamburger.engine.folding import READER_FOLD as DEFAULT_FOLD, parse_folding  # (the default when this ran)
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt

ROOT = Path(__file__).resolve().parents[2]


def chosen(count: int) -> list[list[int]]:
    return json.loads(subprocess.check_output(
        [sys.executable, str(ROOT / "experiments/2026-11-28-full-heads/chosen.py"), str(count)], text=True))


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _ = load_model(None)
    config = model.base.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    slot_bytes = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * 4  # fp32 keys and values
    folding = parse_folding(DEFAULT_FOLD)
    runner = fold_model(None, folding, model)
    common = dict(fold=folding, draft_vocab=model.draft_vocab, lookup=PromptLookup(), ngrams=model.draft_ngrams)
    arms = {"none": [], "fh4": chosen(4), "fh8": chosen(8)}
    methods = [VerifyMethod(runner, tokenizer, name=name, full_heads=heads, **common) for name, heads in arms.items()]
    results = {}
    for length in (128, 256):
        settings = BenchSettings(n_prompts=4, max_new_tokens=length, repeats=1, methods=[])
        prompts = bench_prompts(settings)
        ids = [encode_prompt(tokenizer, p["prompt"]) for p in prompts]
        with tqdm(total=len(prompts) * len(methods), unit="run", file=sys.stderr, desc=f"{length} tokens") as bar:
            rows = measure(methods, prompts, ids, settings, bar)
        results[length] = {name: {"answers_kv": sum(r["output_kv_bytes"] for r in mine) /
                                  (slot_bytes * sum(r["tokens"] for r in mine)),
                                  "tokens": sum(r["tokens"] for r in mine),
                                  "tau": sum(r["tokens"] for r in mine) / sum(r["forwards"] for r in mine)}
                           for name in arms for mine in [[r for r in rows if r["method"] == name]]}
        results[f"rows_{length}"] = [{k: r[k] for k in ("category", "prompt_id", "method", "tokens", "forwards",
                                                        "kv_bytes", "kv_slots", "output_kv_bytes")} for r in rows]
    print(json.dumps({"machine": machine_info(2, "float32", "cpu"), "fold": DEFAULT_FOLD, "heads": arms,
                      "slot_bytes": slot_bytes, "prompts_per_category": 4,
                      "results": results}, indent=1))


if __name__ == "__main__":
    main()
