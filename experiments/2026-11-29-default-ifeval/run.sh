#!/usr/bin/env bash
# IFEval (all 541 prompts, a test set: reported, never used to choose) for the default model's verify_fold as it ships
# since session 50: the default fold and its four full heads, greedy, 128 new tokens, paired with the base's greedy
# answers of ../2026-11-26-long-answers/ (reused: the unchanged base, the same prompts and budget); into
# eval-fh4-n541, skipped when done.
#   bash experiments/2026-11-29-default-ifeval/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-default-ifeval
export MKL_CBWR=AVX2  # as the reused base run
[ -s $E/eval-fh4-n541/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks ifeval --limit 541 \
    --max-new-tokens 128 --no-base-sampled --confidence "" --batch-size 8 --threads 2 \
    --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base experiments/2026-11-26-long-answers/eval-ifeval-default-segments-32-c0.3-p10-n541 \
    --out $E/eval-fh4-n541 > $E/eval-fh4-n541.txt 2>&1
