#!/usr/bin/env bash
# Issue 19: decode speed of the default model with its own MSD drafting against the verify drafter, on one machine, in
# one run. benchmarks/verify_bench.py: 8 chat + 8 GSM8K dev prompts (0..7: not the drafter's dev answers 8..63),
# greedy, batch 1, fp32, 2 threads, methods interleaved prompt by prompt; HF `generate` and HF prompt lookup beside:
#   c0.3:v4096:p10:n:m         `--mode verify` as it shipped before the drafter (the model's own MSD and stop head)
#   c0.3:v4096:p10:n           `--mode verify` with the checkpoint's verify drafter
#   ...@FOLD                   the same two in `--mode verify_fold`
# MODEL (default: the shipped default model); TOKENS (default 128); RUN=2 names a repeat. Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOKENS=${TOKENS:-128}
MODEL=${MODEL:-hamburger/default_model}
FOLD=segments:60:0.45:first:steps=8:p=0.7
POLICIES="c0.3:v4096:p10:n:m,c0.3:v4096:p10:n,c0.3:v4096:p10:n:m@$FOLD,c0.3:v4096:p10:n@$FOLD"
# SWEEP=1: the drafter's stop head at higher confidences (lossless verify only)
[ -z "${SWEEP:-}" ] || POLICIES="c0.3:v4096:p10:n:m,c0.3:v4096:p10:n,c0.45:v4096:p10:n,c0.6:v4096:p10:n"
# SAMPLE=1: sampled decoding (T 0.7, top-p 0.9, seed 0 on every prompt), lossless verify only
[ -z "${SAMPLE:-}" ] || POLICIES="c0.3:v4096:p10:m,c0.3:v4096:p10"
OUT=experiments/2026-11-27-verify-drafter/speed-t$TOKENS${SAMPLE:+-sampled}${SWEEP:+-sweep}${RUN:+-run$RUN}
.venv/bin/python -m benchmarks.verify_bench --model "$MODEL" --policies "$POLICIES" ${SAMPLE:+--sample} \
    --n-chat 8 --n-math 8 --max-new-tokens "$TOKENS" --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
