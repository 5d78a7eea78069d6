#!/usr/bin/env bash
# Check 1 of README: the candidate greedy on the first 120 dev GSM8K prompts, 96 tokens, the base's answers reused
# from session 40's run on them; into greedy120-kv84, skipped when done.
#   bash experiments/2026-11-29-rotated-store/greedy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-rotated-store
export MKL_CBWR=AVX2  # as the reused run
[ -s $E/greedy120-kv84/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks gsm8k --limit 120 \
    --max-new-tokens 96 --confidence "" --batch-size 8 --threads 2 \
    --verify-fold segments:60:0.45:none:bits=8/4:rotate --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base experiments/2026-11-27-keep-fold-full/eval-t96-l120-s45 \
    --out $E/greedy120-kv84 > $E/greedy120-kv84.txt 2>&1
