#!/usr/bin/env bash
# The GPU-trained gated-LoRA model (experiments/2026-11-24-gpu-lora-merged/warm_start, token_prob gate) as a
# candidate default model: its knob chosen by rule (`hamburger calibrate`, dev chat + GSM8K prompts only, the same
# protocol as the shipped model's quality-2026-11-23-calibration), then IFEval (a test set: reported, never used to
# choose) at the chosen knob, paired with the base, and the shipped model's own curve on decode_fidelity's 48 dev
# prompts, to compare the two at equal tau. 2-core CPU, nothing else running, fp32, 2 threads, MKL_CBWR=AVX2.
set -euo pipefail
cd "$(dirname "$0")/../../.."
R=benchmarks/results/quality-2026-11-24-gpu-lora
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
C=${CANDIDATE:-runs/cpu/candidate}
export MKL_CBWR=AVX2
[ -f $C/hamburger_config.json ] || $HB export --model experiments/2026-11-24-gpu-lora-merged/warm_start --out $C \
    --dtype bfloat16 --gate token_prob --default-confidence 1.0
[ -s $R/calibrate.txt ] || $HB calibrate --model $C --confidence 0.8,0.85,0.9,0.95,1.0 --limit 20 \
    --max-new-tokens 96 --batch-size 8 --threads 2 --out $R/calibration | tee $R/calibrate.txt
[ -s $R/shipped_decode_fidelity.json ] || $PY benchmarks/decode_fidelity.py --models hamburger/default_model \
    --confidence 0.9,0.7,0.5 --per-category 16 --threads 2 --out $R/shipped_decode_fidelity.json
# IFEval at the knobs whose dev tau matches the shipped model's knob 0.7 (quality-2026-11-23-calibration/ifeval,
# tau 1.09 there): the two models compared at equal tau, not a choice of knob.
[ -s $R/ifeval-equal-tau/summary.json ] || $HB eval --model $C --tasks ifeval --limit 60 --max-new-tokens 128 \
    --confidence 0.9,0.95 --batch-size 8 --threads 2 --out $R/ifeval-equal-tau
