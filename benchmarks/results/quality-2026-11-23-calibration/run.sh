#!/usr/bin/env bash
# The shipped default model's knob chosen by rule (`hamburger calibrate`, dev chat + GSM8K prompts only), then
# IFEval (a test set: reported, never used to choose) at the default knobs, paired with the base. 2-core CPU,
# nothing else running, fp32, 2 threads, MKL_CBWR=AVX2.
set -euo pipefail
cd "$(dirname "$0")/../../.."
R=benchmarks/results/quality-2026-11-23-calibration
export MKL_CBWR=AVX2
hamburger calibrate --model hamburger/default_model --limit 20 --max-new-tokens 96 --batch-size 8 --threads 2 \
    --out $R/calibration | tee $R/calibrate.txt
hamburger eval --tasks ifeval --limit 60 --max-new-tokens 128 --confidence 0.7,0.9 --batch-size 8 --threads 2 \
    --out $R/ifeval
