#!/usr/bin/env bash
# One arm of README: sampled verify mode on dev GSM8K rows 360-479, 256 tokens, three draws (T 0.7, top-p 0.9, the
# seeds of every draws arm), the answer's tokens older than the default fold's window (60 tokens or 45% of the
# answer's) stored rounded to QUANT_BITS bits (quant_eval.py), nothing folded, no full heads; the base's answers of the
# fh4 run it is paired with reused. Into eval-rows360-480-NAME, skipped when done:
#   QUANT_BITS=8 NAME=q8 bash decode.sh
#   QUANT_BITS=4 QUANT_GROUP=32 NAME=q4g32 bash decode.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-quantized-history
pair=experiments/2026-11-28-full-head-cache
out=$E/eval-rows360-480-$NAME
export MKL_CBWR=AVX2 QUANT_BITS QUANT_GROUP="${QUANT_GROUP:-0}"  # (MKL as every draws arm)
[ -s $out/summary.json ] || nice -n 10 .venv/bin/python $E/quant_eval.py eval --sample only --draws 3 \
    --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k \
    --gsm8k-file $pair/gsm8k_dev_360_480.jsonl --limit 120 --verify-fold segments:60:0.45 --full-heads none \
    --verify-confidence 0.3 --verify-lookup 10 --reuse-base $pair/eval-rows360-480-base --out $out > $out.txt 2>&1
