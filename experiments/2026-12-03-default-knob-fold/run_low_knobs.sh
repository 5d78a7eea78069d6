#!/usr/bin/env bash
# Knobs 0.7 and 0.8 in the folding layout on run.sh's dev prompts, the base's answers reused from calibration/
# (README.md, reported only). Run after run.sh; skipped when its output exists.
set -euo pipefail
cd "$(dirname "$0")"
HB=${HB:-../../.venv/bin/hamburger}
[ -s calibration/summary.json ] && [ -f ../../runs/knob-fold2/hamburger_config.json ] || { echo "run run.sh first" >&2; exit 1; }
[ -s low-knobs/summary.json ] || $HB eval --model ../../runs/knob-fold2 --tasks chat,gsm8k --confidence 0.7,0.8 \
    --limit 120 --max-new-tokens 96 --threads ${THREADS:-1} --reuse-base calibration --out low-knobs 2> low-knobs.log
