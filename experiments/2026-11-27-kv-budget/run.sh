#!/usr/bin/env bash
# Issue 19, session 38: what the KV headroom at 256 tokens buys sampled long math. The default fold (s45,
# `segments:60:0.45:first:steps=8:p=0.7`) leaves GSM8K answers at 256 tokens with ~0.56 of the base's KV; with a
# budget (`:kv=0.65`) it folds only while an answer holds more than 0.65 slots per token, so it folds less. Sampled
# (T 0.7, top-p 0.9, seed = the prompt's position), drafting as `generate` does, 256 new tokens, on dev GSM8K rows
# 0-59 and 60-119 with the base's and base-sampled answers and s45's decodes of ../2026-11-27-growing-first/ (the same
# prompts and seeds), paired there by summary.py. A step is skipped when its output exists.
# The eviction control (README): FOLD=segments:60:0.45:none:steps=8:p=0.7:kv=0.56 NAME=n56 bash run.sh
# The default fold decoded again by this session's engine: FOLD=segments:60:0.45:first:steps=8:p=0.7 NAME=s45now, on
# rows 0-119 and (ROWS120=1) on rows 120-239.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-kv-budget
FOLD=${FOLD:-segments:60:0.45:first:steps=8:p=0.7:kv=0.65}
NAME=${NAME:-s45kv65}
export MKL_CBWR=AVX2  # as ../2026-11-27-growing-first/ ran
FIRST=experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60
MORE=experiments/2026-11-27-gpu-fold-reverse
decode() {  # OUT TASK-ARGS...
    local out=$E/eval-$1
    shift
    [ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --verify-fold $FOLD \
        --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 \
        --tasks gsm8k --limit 60 "$@" --out $out > $out.txt 2>&1
}
if [ -z "${ROWS120:-}" ]; then
    decode rows0-60-$NAME --reuse-base $FIRST
    decode rows60-120-$NAME --gsm8k-file $MORE/gsm8k_dev_60_120.jsonl --reuse-base $MORE/eval-t256-gsm8k-more-default
else  # ROWS120=1: dev rows 120-239, against session 33's stage 2 there (its base and base-sampled answers)
    G=experiments/2026-11-27-growing-first
    decode rows120-240-$NAME --gsm8k-file $G/gsm8k_dev_120_240.jsonl --limit 120 \
        --reuse-base $G/eval-rows120-240-default
fi
