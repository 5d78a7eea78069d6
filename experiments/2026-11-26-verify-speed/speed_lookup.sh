#!/usr/bin/env bash
# Issue 19: verify mode with folding, drafting by prompt lookup where the text's last 2-3 tokens occurred before
# (`:p10`, up to 10 tokens; engine/lookup.py) and by the MSD over the 4096 most frequent training-response tokens
# elsewhere (`:v4096`), beside the same policies without lookup, HF generate and HF prompt lookup (10 tokens).
# benchmarks/verify_bench.py: 5 chat + 5 GSM8K dev prompts, 128 new tokens, greedy, batch 1, fp32, 2 threads,
# MKL_CBWR=AVX2, methods interleaved prompt by prompt. The GPU warm start. Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=experiments/2026-11-26-verify-speed
.venv/bin/python -m benchmarks.verify_bench --model experiments/2026-11-25-gpu-v2-two-sets/warm_start \
    --policies c0.3:v4096:p10,c0.3:v4096@segments:32,c0.3:v4096:p10@segments:32,c0.01:v4096:p10@segments:32 \
    --n-chat 5 --n-math 5 --max-new-tokens 128 --threads 2 --skip-costs \
    --out $D/speed_lookup.json > $D/speed_lookup.log 2>&1
