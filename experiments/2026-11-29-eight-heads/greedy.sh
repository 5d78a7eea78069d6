#!/usr/bin/env bash
# Rule 4 of README: greedy verify_fold (the default fold) with the eight full heads on the default model's calibration
# prompts (20 chat + 20 GSM8K dev prompts, 96 tokens), reusing the base's answers of session 50's fh4 run there
# (../2026-11-28-full-head-cache/greedy-fh4); into greedy-fh8, skipped when done.
#   bash greedy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-eight-heads
export MKL_CBWR=AVX2
heads=$(.venv/bin/python experiments/2026-11-28-full-heads/chosen.py 8 |
        .venv/bin/python -c "import json, sys; print(','.join(f'{l}:{g}' for l, g in json.load(sys.stdin)))")
[ -s $E/greedy-fh8/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks chat,gsm8k --limit 20 \
    --max-new-tokens 96 --confidence "" --batch-size 8 --threads 2 --verify-fold segments:60:0.45:first:steps=8:p=0.7 \
    --verify-confidence 0.3 --verify-lookup 10 --full-heads "$heads" \
    --reuse-base experiments/2026-11-28-full-head-cache/greedy-fh4 --out $E/greedy-fh8 > $E/greedy-fh8.txt 2>&1
