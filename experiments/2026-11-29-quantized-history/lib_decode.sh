#!/usr/bin/env bash
# README's check of the library's store: sampled verify_fold by FOLD (a spec with bits=8) through plain `hamburger
# eval`, on the rows, seeds and references of decode.sh, into eval-rows360-480-NAME, skipped when done:
#   FOLD=segments:60:0.45:none:bits=8 NAME=q8-lib bash lib_decode.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-quantized-history
pair=experiments/2026-11-28-full-head-cache
out=$E/eval-rows360-480-$NAME
export MKL_CBWR=AVX2  # as every draws arm
[ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 --confidence "" \
    --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --gsm8k-file $pair/gsm8k_dev_360_480.jsonl \
    --limit 120 --verify-fold "$FOLD" --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base $pair/eval-rows360-480-base --out $out > $out.txt 2>&1
