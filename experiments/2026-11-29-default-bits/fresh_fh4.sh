#!/usr/bin/env bash
# README's added arm: the shipped verify_fold (DEFAULT_FOLD as it ships, the checkpoint's fold reader and full heads)
# sampled on fresh.sh's 120 chat prompts, seeds and budget, the base's answers reused from eval-chat240-360; into
# eval-chat240-360-fh4, skipped when done.
#   bash experiments/2026-11-29-default-bits/fresh_fh4.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-default-bits
export MKL_CBWR=AVX2  # as every draws arm
[ -s $E/eval-chat240-360-fh4/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 \
    --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks chat \
    --chat-file $E/chat_dev_240_360.jsonl --limit 120 \
    --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base $E/eval-chat240-360 --out $E/eval-chat240-360-fh4 > $E/eval-chat240-360-fh4.txt 2>&1
