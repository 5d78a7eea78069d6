#!/usr/bin/env bash
# The arms of README.md in order; steps are skipped when their output exists. Exports go to runs/ (not git).
set -euo pipefail
cd "$(dirname "$0")"
HB=${HB:-../../.venv/bin/hamburger}
REF=../2026-12-03-default-knob-fold/paper-layout
for d in 8 4 0; do
    C=../../runs/fold-distance-$d
    [ -f $C/hamburger_config.json ] || $HB export --model ../../hamburger/default_model --out $C --single-tail 1 \
        --fold-tail $d
    [ -s fold-$d/summary.json ] || $HB eval --model $C --tasks gsm8k --confidence 0.9 --limit 120 \
        --max-new-tokens 96 --threads ${THREADS:-2} --reuse-base $REF --out fold-$d 2> fold-$d.log
done
