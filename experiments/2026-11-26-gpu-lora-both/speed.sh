#!/usr/bin/env bash
# Issue 19, session 30: does lora-both draft faster than the shipped default model? Both models timed as `generate`
# decodes (benchmarks/verify_bench.py, greedy, batch 1, 8 chat + 8 GSM8K dev prompts, 128 new tokens, fp32, 2 threads,
# MKL_CBWR=AVX2, methods interleaved prompt by prompt, HF `generate` and HF prompt lookup beside them): lossless verify
# and verify_fold at the default folding, drafting at stop head 0.3, prompt lookup 10, the 4096-token draft vocabulary
# (the shipped one, copied into the candidate: it depends on the tokenizer and the training answers only).
# Run on a quiet machine. Outputs: speed_NAME.json/.log here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-gpu-lora-both
MODEL=${MODEL:-$E/compare-lora-both/candidate}  # (made by recipes/lent-gpu/compare.sh from the export)
[ -f "$MODEL"/draft_vocab.safetensors ] || cp hamburger/default_model/draft_vocab.safetensors "$MODEL"/
FOLD=segments:60:first:steps=8:p=0.7  # DEFAULT_FOLD when this ran (sessions 28-32)
export MKL_CBWR=AVX2
for name in lora-both default; do
    [ -s $E/speed_$name.json ] && continue
    model=(); [ $name = default ] || model=(--model "$MODEL")
    .venv/bin/python -m benchmarks.verify_bench "${model[@]}" --policies c0.3:v4096:p10@$FOLD,c0.3:v4096:p10 \
        --n-chat 8 --n-math 8 --max-new-tokens 128 --threads 2 --skip-costs \
        --out $E/speed_$name.json > $E/speed_$name.log 2>&1
done
