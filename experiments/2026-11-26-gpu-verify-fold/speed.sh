#!/usr/bin/env bash
# Issue 19: the speed of the model trained in verify-fold's layout (lora-verify-fold, MODEL) against the shipped
# default model, as speed_final.sh of experiments/2026-11-26-verify-speed times them (8 chat + 8 GSM8K dev prompts,
# 128 new tokens, greedy, batch 1, fp32, 2 threads, MKL_CBWR=AVX2, methods interleaved prompt by prompt, HF
# `generate` and HF prompt lookup beside them; benchmarks/verify_bench.py): stop head 0.3, prompt lookup 10, the
# 4096-token draft vocabulary, with folding segments:32 (verify_fold) and without (lossless verify).
# Run on a quiet machine. Outputs: speed_NAME.json/.log here.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=experiments/2026-11-26-gpu-verify-fold
MODEL=${MODEL:-runs/gpu-s24/lora-verify-fold-export}
export MKL_CBWR=AVX2
[ -f "$MODEL"/hamburger_config.json ] || .venv/bin/python $D/rebuild.py "$MODEL"
for name in lora-verify-fold default; do
    [ -s $D/speed_$name.json ] && continue
    model=(); [ $name = default ] || model=(--model "$MODEL")
    .venv/bin/python -m benchmarks.verify_bench "${model[@]}" --policies c0.3:v4096:p10@segments:32,c0.3:v4096:p10 \
        --n-chat 8 --n-math 8 --max-new-tokens 128 --threads 2 --skip-costs \
        --out $D/speed_$name.json > $D/speed_$name.log 2>&1
done
