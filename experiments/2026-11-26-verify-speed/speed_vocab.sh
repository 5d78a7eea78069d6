#!/usr/bin/env bash
# Issue 19: verify mode with folding on this CPU, with the MSD's drafts restricted to the 4096 most frequent training-
# response tokens (`:v4096`; the base still verifies every token over the whole vocabulary), beside the unrestricted
# stop-head policy of experiments/2026-11-25-verify-fold/speed.sh, plain verify mode, HF generate and HF prompt lookup
# (benchmarks/verify_bench.py: 5 chat + 5 GSM8K dev prompts, 128 new tokens, greedy, batch 1, fp32, 2 threads,
# MKL_CBWR=AVX2, methods interleaved prompt by prompt, plus the cost of a verify step's parts). The GPU warm start.
# Run on a quiet machine (nothing else running).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=experiments/2026-11-26-verify-speed
.venv/bin/python -m benchmarks.verify_bench --model experiments/2026-11-25-gpu-v2-two-sets/warm_start \
    --policies c0.5:v4096,c0.5@segments:32,c0.5:v4096@segments:32,c0.3:v4096@segments:32,c0.01:v4096@segments:32 \
    --n-chat 5 --n-math 5 --max-new-tokens 128 --threads 2 --cost-reps 9 \
    --out $D/speed_vocab.json > $D/speed_vocab.log 2>&1
