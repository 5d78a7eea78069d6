#!/usr/bin/env bash
# The knob rule on the shipped weights in the folding single tail (README.md). Steps are skipped when their output
# exists; the candidate's export goes to runs/ (not git), the sweep's eval outputs to calibration/.
set -euo pipefail
cd "$(dirname "$0")"
HB=${HB:-../../.venv/bin/hamburger}
C=../../runs/knob-fold2
[ -f $C/hamburger_config.json ] || $HB export --model ../../hamburger/default_model --out $C --single-tail 1 --fold-tail 2
[ -s calibrate.txt ] || $HB calibrate --model $C --confidence 0.9,0.95,1.0 --limit 120 --max-new-tokens 96 \
    --threads ${THREADS:-1} --out calibration --dry-run > calibrate.txt 2> calibrate.log
