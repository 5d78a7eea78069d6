#!/usr/bin/env bash
# The greedy smoke run README names (before any decode): 4 dev GSM8K prompts (rows 360-363), 200 tokens, greedy
# verify mode with the answer's older tokens rounded to 8 bits (one scale per head) and to 4 bits (one scale per
# head), into smoke-q8 and smoke-q4; then `python smoke.py > smoke.txt` compares them with the base's greedy answers.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-quantized-history
for bits in 8 4; do
    QUANT_BITS=$bits .venv/bin/python $E/quant_eval.py eval --confidence "" --batch-size 4 --threads 2 \
        --max-new-tokens 200 --tasks gsm8k --gsm8k-file experiments/2026-11-28-full-head-cache/gsm8k_dev_360_480.jsonl \
        --limit 4 --verify-fold segments:60:0.45 --full-heads none --verify-confidence 0.3 --verify-lookup 10 \
        --out $E/smoke-q$bits > $E/smoke-q$bits.txt 2>&1
done
