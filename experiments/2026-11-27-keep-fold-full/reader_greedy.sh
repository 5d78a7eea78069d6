#!/usr/bin/env bash
# Session 41, after the decodes above: greedy verify_fold at the default fold with the fold reader (the shipped model
# with the warm start at `lora_scope: after_fold` as its reader, runs/keep-fold/dm-reader, built by reader_speed.sh
# NAME=reader), on session 33's greedy long-answer sets and settings (../2026-11-27-growing-first/run.sh STAGE=3: dev
# GSM8K rows 0-59 and 20 chat dev prompts, 256 tokens, the base's answers reused), so each compares with that
# folder's eval-greedy-*-s45 (the shipped model, no reader). Output: eval-greedy-*-reader here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-keep-fold-full
export MKL_CBWR=AVX2
decode() {  # OUT TASK-ARGS...
    local out=$E/eval-$1
    shift
    [ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --model runs/keep-fold/dm-reader \
        --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 --confidence "" \
        --batch-size 8 --threads 2 --max-new-tokens 256 "$@" --out $out > $out.txt 2>&1
}
decode greedy-rows0-60-reader --tasks gsm8k --limit 60 \
    --reuse-base experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60
decode greedy-chat20-reader --tasks chat --limit 20 \
    --reuse-base experiments/2026-11-26-long-answers/eval-dev-default-segments-32-c0.3-p10-t256-chat
