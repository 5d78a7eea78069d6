#!/usr/bin/env bash
# IFEval (a test set: reported, never used to choose) for the shipped model with its knob-tied prefilter 0.75, at
# knobs 0.95 and 0.9, each paired with the base in the same run: the first 60 prompts, 128 new tokens, the protocol
# of benchmarks/results/quality-2026-11-24-gpu-lora/ifeval-equal-tau (the same model without the prefilter).
# 2-core CPU, fp32, 2 threads, MKL_CBWR=AVX2.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export MKL_CBWR=AVX2
${HB:-.venv/bin/hamburger} eval --model hamburger/default_model --tasks ifeval --limit 60 --max-new-tokens 128 \
    --confidence 0.9,0.95 --batch-size 8 --threads 2 --out benchmarks/results/prefilter-knob/ifeval
