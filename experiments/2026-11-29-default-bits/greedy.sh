#!/usr/bin/env bash
# Check 1 of README: greedy verify_fold with the candidate fold on the default model's calibration prompts (20 chat +
# 20 GSM8K dev prompts, 96 tokens), the base's answers reused from the shipped default's run; into greedy-q4, skipped
# when done.
#   bash experiments/2026-11-29-default-bits/greedy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-default-bits
export MKL_CBWR=AVX2  # as the reused run
[ -s $E/greedy-q4/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks chat,gsm8k --limit 20 \
    --max-new-tokens 96 --confidence "" --batch-size 8 --threads 2 \
    --verify-fold segments:60:0.45:none:bits=4 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base experiments/2026-11-28-full-head-cache/greedy-fh4 --out $E/greedy-q4 > $E/greedy-q4.txt 2>&1
