#!/usr/bin/env bash
# The diagnostic of README.md: the shipped weights with a 3-token single tail (no fold) at knobs 0.9 and 0.95 on the
# 120 GSM8K dev prompts, the base's answers reused from paper-layout/. Steps are skipped when their output exists.
set -euo pipefail
cd "$(dirname "$0")"
HB=${HB:-../../.venv/bin/hamburger}
C=../../runs/knob-single3
[ -s paper-layout/summary.json ] || { echo "run run_paper_layout.sh first" >&2; exit 1; }
[ -f $C/hamburger_config.json ] || $HB export --model ../../hamburger/default_model --out $C --single-tail 3
[ -s single-tail/summary.json ] || $HB eval --model $C --tasks gsm8k --confidence 0.9,0.95 --limit 120 \
    --max-new-tokens 96 --threads ${THREADS:-1} --reuse-base paper-layout --out single-tail 2> single-tail.log
