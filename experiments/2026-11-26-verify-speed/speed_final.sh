#!/usr/bin/env bash
# Issue 19: the headline speed of verify mode with folding and prompt lookup on this CPU, on more dev prompts than
# speed_lookup.sh (8 chat + 8 GSM8K, 128 new tokens, greedy, batch 1, fp32, 2 threads, MKL_CBWR=AVX2, methods
# interleaved prompt by prompt; benchmarks/verify_bench.py), for MODEL (default: the GPU warm start; `default` for
# the shipped default model). Policies: last session's (stop head 0.5, folding segments:32), the same with lookup 10,
# stop head 0.3 with lookup (with and without the 4096-token draft vocabulary), and lossless verify with lookup.
# Run on a quiet machine: stop other jobs first (this session paused its CPU training run with SIGSTOP).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=experiments/2026-11-26-verify-speed
MODEL=${MODEL:-experiments/2026-11-25-gpu-v2-two-sets/warm_start}
NAME=${NAME:-warm_start}
model=(); [ "$MODEL" = default ] || model=(--model "$MODEL")
.venv/bin/python -m benchmarks.verify_bench "${model[@]}" \
    --policies c0.5@segments:32,c0.5:p10@segments:32,c0.3:p10@segments:32,c0.3:v4096:p10@segments:32,c0.3:p10 \
    --n-chat 8 --n-math 8 --max-new-tokens 128 --threads 2 --skip-costs \
    --out $D/speed_final_$NAME.json > $D/speed_final_$NAME.log 2>&1
