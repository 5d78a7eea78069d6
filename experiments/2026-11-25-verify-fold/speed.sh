#!/usr/bin/env bash
# Issue 19: decode speed of verify mode with folding on this CPU, beside plain verify mode, HF generate and HF prompt
# lookup (benchmarks/verify_bench.py: 5 chat + 5 GSM8K dev prompts, 128 new tokens, greedy, batch 1, fp32, 2 threads,
# MKL_CBWR=AVX2, methods interleaved prompt by prompt). The warm start of this experiment. Run on a quiet machine:
# stop other jobs first (this session paused its CPU training run with SIGSTOP while it ran).
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python -m benchmarks.verify_bench --model experiments/2026-11-25-gpu-v2-two-sets/warm_start \
    --policies c0.5,c0.5@segments:32,c0.01@segments:32 --n-chat 5 --n-math 5 --max-new-tokens 128 --threads 2 \
    --skip-costs --out experiments/2026-11-25-verify-fold/speed.json > experiments/2026-11-25-verify-fold/speed.log 2>&1
