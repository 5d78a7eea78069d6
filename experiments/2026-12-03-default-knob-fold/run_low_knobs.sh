#!/usr/bin/env bash
# Knobs 0.7 and 0.8 in the folding layout on run.sh's dev prompts, GSM8K only (README.md, reported
# only). Skipped when its output exists.
set -euo pipefail
cd "$(dirname "$0")"
HB=${HB:-../../.venv/bin/hamburger}
[ -f ../../runs/knob-fold2/hamburger_config.json ] || { echo "run run.sh first (its export)" >&2; exit 1; }
[ -s low-knobs/summary.json ] || $HB eval --model ../../runs/knob-fold2 --tasks gsm8k --confidence 0.7,0.8 \
    --limit 120 --max-new-tokens 96 --threads ${THREADS:-1} --out low-knobs 2> low-knobs.log
