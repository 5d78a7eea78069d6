#!/usr/bin/env bash
# The shipped model v2 with the knob-tied prefilter as the default model's candidate config: its knob chosen by rule
# (`hamburger calibrate`, dev chat + GSM8K prompts only, the protocol of the shipped config's own calibration:
# knobs 0.8-1.0, 20 prompts per task, 96 new tokens). 2-core CPU, fp32, 2 threads, MKL_CBWR=AVX2.
#   bash benchmarks/results/prefilter-knob/run_calibrate.sh Q
set -euo pipefail
cd "$(dirname "$0")/../../.."
Q=${1:?usage: run_calibrate.sh PREFILTER}
R=benchmarks/results/prefilter-knob
HB=${HB:-.venv/bin/hamburger}
export MKL_CBWR=AVX2
C=runs/cpu/v2-prefilter-knob-$Q-calibrated
[ -f $C/hamburger_config.json ] || $HB export --model hamburger/default_model --out $C --dtype bfloat16 \
    --prefilter "$Q" --default-confidence 1.0
$HB calibrate --model $C --confidence 0.8,0.85,0.9,0.95,1.0 --limit 20 --max-new-tokens 96 --batch-size 8 \
    --threads 2 --out $R/calibration-$Q | tee $R/calibrate-$Q.txt
