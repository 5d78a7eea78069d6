#!/usr/bin/env bash
# Check 1: the shipped default fold (`DEFAULT_FOLD`, `segments:60:0.45:none:bits=8/4:rotate:prompt=4`), sampled, on
# session 52's long-math rows, seeds and base references, as `../2026-11-29-default-math/decode.sh` ran the fold
# before it (skipped when done):
#   bash experiments/2026-12-03-default-mode/math.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-12-03-default-mode
pair=experiments/2026-11-28-full-head-cache
out=$E/eval-rows360-480-prompt4
export MKL_CBWR=AVX2  # as every draws arm
[ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 --confidence "" \
    --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --gsm8k-file $pair/gsm8k_dev_360_480.jsonl \
    --limit 120 --verify-fold segments:60:0.45:none:bits=8/4:rotate:prompt=4 --verify-confidence 0.3 \
    --verify-lookup 10 --reuse-base $pair/eval-rows360-480-base --out $out > $out.txt 2>&1
