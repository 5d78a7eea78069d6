#!/usr/bin/env bash
# README's IFEval report (a test set: it chooses nothing): all 541 prompts, greedy, 128 new tokens, the candidate,
# paired with the base's greedy answers of ../2026-11-26-long-answers/ (as session 54's ifeval.sh); into
# eval-ifeval-prompt4-n541, skipped when done.
#   bash experiments/2026-11-29-prompt-store/ifeval.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-prompt-store
export MKL_CBWR=AVX2  # as the reused base run
[ -s $E/eval-ifeval-prompt4-n541/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks ifeval --limit 541 \
    --max-new-tokens 128 --no-base-sampled --confidence "" --batch-size 8 --threads 2 \
    --verify-fold segments:60:0.45:none:bits=8/4:rotate:prompt=4 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base experiments/2026-11-26-long-answers/eval-ifeval-default-segments-32-c0.3-p10-n541 \
    --out $E/eval-ifeval-prompt4-n541 > $E/eval-ifeval-prompt4-n541.txt 2>&1
