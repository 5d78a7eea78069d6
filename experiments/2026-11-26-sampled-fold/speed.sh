#!/usr/bin/env bash
# Issue 19, session 29: sampled decoding speed at batch 1 (benchmarks/verify_bench.py --sample: temperature 0.7, top-p
# 0.9, seed 0 on every prompt), 8 chat + 8 GSM8K dev prompts, TOKENS new tokens (default 128), fp32, 2 threads,
# MKL_CBWR=AVX2, methods interleaved prompt by prompt: HF `generate` and HF prompt lookup sampling, lossless verify
# (speculative sampling) and verify_fold at the default folding, both drafting as `generate` does (stop head 0.3,
# prompt lookup 10, the 4096-token draft vocabulary). Run on a quiet machine. Output: speed_sampled_tTOKENS.json/.log.
# FOLD=SPEC times verify_fold with that folding alone (no lossless verify), as speed_sampled_tTOKENS-SPEC.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-sampled-fold
TOKENS=${TOKENS:-128}
NAME=t$TOKENS
if [ -n "${FOLD:-}" ]; then
    NAME=t$TOKENS-${FOLD//:/-} POLICIES=c0.3:v4096:p10@$FOLD
else
    POLICIES=c0.3:v4096:p10@segments:60:first:steps=8:p=0.7  # DEFAULT_FOLD when this ran (sessions 28-32)
    POLICIES=$POLICIES,c0.3:v4096:p10
fi
export MKL_CBWR=AVX2
[ -s $E/speed_sampled_$NAME.json ] || .venv/bin/python -m benchmarks.verify_bench --sample \
    --policies "$POLICIES" --n-chat 8 --n-math 8 --max-new-tokens $TOKENS \
    --threads 2 --skip-costs --out $E/speed_sampled_$NAME.json > $E/speed_sampled_$NAME.log 2>&1
