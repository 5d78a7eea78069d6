#!/usr/bin/env bash
# The returned lora-merged model (trained with one slot per group) read in the single-tail layout, no training:
# the knob rule (hamburger calibrate, as compare.sh runs it) and its decode curve on the 48 dev prompts (tail 1; the
# tail-0 curve is compare-lora-merged/decode_fidelity.json). Each step is skipped when its output exists.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
E=experiments/2026-11-25-gpu-v2-two-sets
C=$E/compare-lora-merged/candidate-tail1
export MKL_CBWR=AVX2
[ -f $C/hamburger_config.json ] || $HB export --model $E/compare-lora-merged/candidate --out $C --dtype bfloat16 \
    --single-tail 1
[ -s $E/single-tail/calibrate.txt ] || { mkdir -p $E/single-tail; $HB calibrate --model $C \
    --confidence 0.8,0.85,0.9,0.95,1.0 --limit 20 --max-new-tokens 96 --batch-size 8 --threads 2 \
    --out $E/single-tail/calibration | tee $E/single-tail/calibrate.txt; }
[ -s $E/single-tail/decode_fidelity.json ] || $PY benchmarks/decode_fidelity.py --models $C \
    --confidence 0.95,0.9,0.7,0.5 --prefilters 0.75 --threads 2 --out $E/single-tail/decode_fidelity.json \
    2>&1 | grep -v Loading | tee $E/single-tail/decode_fidelity.log
