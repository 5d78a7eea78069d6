#!/usr/bin/env bash
# README's added report: greedy verify_fold with the candidate fold on the first 120 chat and 120 GSM8K dev prompts
# (the calibration prompts and 100 more of each), 96 tokens, the base's answers reused from session 40's run on them;
# into greedy240-q4, skipped when done.
#   bash experiments/2026-11-29-default-bits/greedy240.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-default-bits
export MKL_CBWR=AVX2  # as the reused run
[ -s $E/greedy240-q4/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks chat,gsm8k --limit 120 \
    --max-new-tokens 96 --confidence "" --batch-size 8 --threads 2 \
    --verify-fold segments:60:0.45:none:bits=4 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base experiments/2026-11-27-keep-fold-full/eval-t96-l120-s45 --out $E/greedy240-q4 > $E/greedy240-q4.txt 2>&1
