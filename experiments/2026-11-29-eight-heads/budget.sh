#!/usr/bin/env bash
# The curve point fh4-kv62 of README: the default model (its four full heads) with the default fold under a KV budget
# (`...:kv=0.62`: groups past the window fold only while the answer holds more than 0.62 slots per token), sampled
# verify_fold on dev rows 360-479 as decode.sh decodes fh8; into eval-rows360-480-fh4-kv62, skipped when done.
#   bash budget.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-eight-heads
P=experiments/2026-11-28-full-head-cache
out=$E/eval-rows360-480-fh4-kv62
export MKL_CBWR=AVX2  # as every draws arm
[ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 --confidence "" \
    --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --gsm8k-file $P/gsm8k_dev_360_480.jsonl \
    --limit 120 --verify-fold segments:60:0.45:first:steps=8:p=0.7:kv=0.62 --verify-confidence 0.3 \
    --verify-lookup 10 --reuse-base $P/eval-rows360-480-base --out $out > $out.txt 2>&1
