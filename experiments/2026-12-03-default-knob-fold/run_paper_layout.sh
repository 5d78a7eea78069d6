#!/usr/bin/env bash
# The knobs of run.sh in the paper's layout (the shipped config unchanged) on the same dev prompts, the base's answers
# reused from run.sh's calibration/ (README.md). Run after run.sh; skipped when its output exists.
set -euo pipefail
cd "$(dirname "$0")"
HB=${HB:-../../.venv/bin/hamburger}
[ -s calibration/summary.json ] || { echo "run run.sh first" >&2; exit 1; }
[ -s paper-layout/summary.json ] || $HB eval --model ../../hamburger/default_model --tasks chat,gsm8k \
    --confidence 0.9,0.95 --limit 120 --max-new-tokens 96 --threads ${THREADS:-1} --reuse-base calibration \
    --out paper-layout 2> paper-layout.log
