#!/usr/bin/env bash
# The knobs of run.sh in the paper's layout (the shipped config unchanged) on the same dev prompts, GSM8K only
# (README.md). Skipped when its output exists.
set -euo pipefail
cd "$(dirname "$0")"
HB=${HB:-../../.venv/bin/hamburger}
[ -s paper-layout/summary.json ] || $HB eval --model ../../hamburger/default_model --tasks gsm8k \
    --confidence 0.9,0.95 --limit 120 --max-new-tokens 96 --threads ${THREADS:-1} \
    --out paper-layout 2> paper-layout.log
