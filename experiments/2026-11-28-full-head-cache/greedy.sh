#!/usr/bin/env bash
# Rule 3 of README: greedy verify_fold (the default fold) with the four full heads and without, on the default model's
# calibration prompts (20 chat + 20 GSM8K dev prompts, 96 tokens), the second run reusing the first's base answers;
# each into greedy-ARM, skipped when done.
#   bash greedy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-full-head-cache
export MKL_CBWR=AVX2
heads=$(.venv/bin/python experiments/2026-11-28-full-heads/chosen.py 4 |
        .venv/bin/python -c "import json, sys; print(','.join(f'{l}:{g}' for l, g in json.load(sys.stdin)))")
common=(--tasks chat,gsm8k --limit 20 --max-new-tokens 96 --confidence "" --batch-size 8 --threads 2
        --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10)
[ -s $E/greedy-fh4/summary.json ] || nice -n 10 .venv/bin/hamburger eval "${common[@]}" --full-heads "$heads" \
    --out $E/greedy-fh4 > $E/greedy-fh4.txt 2>&1
[ -s $E/greedy-af-reader/summary.json ] || nice -n 10 .venv/bin/hamburger eval "${common[@]}" --full-heads none \
    --reuse-base $E/greedy-fh4 --out $E/greedy-af-reader > $E/greedy-af-reader.txt 2>&1
