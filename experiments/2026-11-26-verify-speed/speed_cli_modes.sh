#!/usr/bin/env bash
# Issue 19: the speed of `hamburger generate`'s verify modes as shipped, on the shipped default model: stop head 0.3,
# prompt lookup 10, the checkpoint's 4096-token draft vocabulary; lossless (`--mode verify`, the default) and folding
# segments:32 (`--mode verify_fold`). benchmarks/verify_bench.py: the 8 chat + 8 GSM8K dev prompts of speed_final.sh,
# 128 new tokens, greedy, batch 1, fp32, 2 threads, MKL_CBWR=AVX2, methods interleaved prompt by prompt, beside HF
# generate and HF prompt lookup. Run on a quiet machine (this session paused its other jobs with SIGSTOP).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=experiments/2026-11-26-verify-speed
.venv/bin/python -m benchmarks.verify_bench --policies c0.3:v4096:p10,c0.3:v4096:p10@segments:32 \
    --n-chat 8 --n-math 8 --max-new-tokens 128 --threads 2 --skip-costs \
    --out $D/speed_cli_modes.json > $D/speed_cli_modes.log 2>&1
