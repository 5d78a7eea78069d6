"""Session 42: what the lean stack's merged adapter weights (`HamburgerModel.fuse_adapters`) do to mode `hamburger` on
the shipped default model, whose adapters act at merged slots only (`lora_scope: merged`): a forward of one merged
slot then reads the merged weights (built once per process) instead of running 210 LoRA layers. 8 chat (T0) + 8
GSM8K dev prompts (`build_prompts`, dev split, the first 8 of each), greedy, confidence 0.7 (a knob that merges),
128 new tokens, batch 1, fp32, 2 threads; fuse off and on interleaved prompt by prompt, after one warm-up prompt
each way (so the merged weights are built before timing; their build is timed on its own). Outputs must be the same
tokens up to rounding: the count of differing answers is recorded. Appends one JSON line to
hamburger_mode_fuse.jsonl here.

    python experiments/2026-11-27-keep-fold-full/hamburger_mode_fuse.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.loading import load_model
from hamburger.core.lora import lora_layers
from hamburger.data.prompts import build_prompts
from hamburger.engine.generate import generate
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig

N, TOKENS, CONFIDENCE = 8, 128, 0.7


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer = load_model()[:2]
    prompts = [r["prompt"] for source in ("t0_prompts", "gsm8k") for r in build_prompts([source], "dev")[:N]]
    config = DecodingConfig(max_new_tokens=TOKENS, confidence=CONFIDENCE)
    ids = [encode_prompt(tokenizer, p) for p in prompts]
    layers = lora_layers(model.base)
    for fuse in (False, True):  # warm-up
        model.fuse_adapters = fuse
        generate(model, tokenizer, ids[0], config)
    for layer in layers:
        layer.__dict__.pop("_merged", None)
    start = time.perf_counter()
    with torch.inference_mode():
        for layer in layers:
            layer.merged_weight()
    build_s = time.perf_counter() - start
    runs = {False: [], True: []}
    for prompt in ids:
        for fuse in (False, True):
            model.fuse_adapters = fuse
            runs[fuse].append(generate(model, tokenizer, prompt, config))
    summary = {}
    for fuse, results in runs.items():
        tokens = sum(r.tokens - 1 for r in results)
        seconds = sum(r.decode_s for r in results)
        summary["fused" if fuse else "adapters"] = {
            "decode_tok_s": round(tokens / seconds, 2), "tau": round(sum(r.tokens for r in results)
                                                                     / sum(r.forwards for r in results), 3)}
    differ = sum(a.token_ids != b.token_ids for a, b in zip(runs[False], runs[True]))
    row = {"machine": machine_info(2, "float32"), "prompts": len(ids), "max_new_tokens": TOKENS,
           "confidence": CONFIDENCE, "summary": summary, "answers_differing": differ,
           "merged_build_s": round(build_s, 3), "lora_layers": len(layers)}
    with open(Path(__file__).with_name("hamburger_mode_fuse.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row["summary"]), differ, round(build_s, 3))


if __name__ == "__main__":
    main()
