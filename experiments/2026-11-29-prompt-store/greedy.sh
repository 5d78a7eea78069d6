#!/usr/bin/env bash
# Check 1 of README: the candidate greedy on the first 120 dev GSM8K prompts, 96 tokens, the base's answers reused
# from session 40's run (as session 54's greedy.sh); into greedy120-prompt4, skipped when done.
#   bash experiments/2026-11-29-prompt-store/greedy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-prompt-store
export MKL_CBWR=AVX2  # as the reused run
[ -s $E/greedy120-prompt4/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks gsm8k --limit 120 \
    --max-new-tokens 96 --confidence "" --batch-size 8 --threads 2 \
    --verify-fold segments:60:0.45:none:bits=8/4:rotate:prompt=4 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base experiments/2026-11-27-keep-fold-full/eval-t96-l120-s45 \
    --out $E/greedy120-prompt4 > $E/greedy120-prompt4.txt 2>&1
