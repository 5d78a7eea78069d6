#!/usr/bin/env bash
# Check 2 of README: the candidate's three sampled draws on session 54's 103 chat dev prompts (positions 360-462),
# 256 tokens, the base's greedy answers and sampled draws reused from session 54's run on them; into
# eval-chat360-463-prompt4, skipped when done.
#   bash experiments/2026-11-29-prompt-store/chat.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-prompt-store
S=experiments/2026-11-29-rotated-store
export MKL_CBWR=AVX2  # as every draws arm
[ -s $E/eval-chat360-463-prompt4/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 \
    --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks chat --chat-file $S/chat_dev_360_463.jsonl \
    --limit 103 --verify-fold segments:60:0.45:none:bits=8/4:rotate:prompt=4 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base $S/eval-chat360-463 --out $E/eval-chat360-463-prompt4 > $E/eval-chat360-463-prompt4.txt 2>&1
