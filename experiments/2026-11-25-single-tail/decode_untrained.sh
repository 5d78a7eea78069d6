#!/usr/bin/env bash
# The decode curve of the line's warm start (trained with one slot per group) read in both layouts, no training:
# single_tail 0 (its own) and 1, at knobs 0.9 / 0.7 / 0.5 with the shipped model's gate (token_prob, prefilter 0.75),
# on the 48 dev prompts of benchmarks/results/prefilter-knob (16 per category), greedy, 96 new tokens, fp32.
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2
nice -n 5 .venv/bin/python benchmarks/decode_fidelity.py --models experiments/2026-11-24-cpu-v2-continue/warm_start \
    --gates token_prob --prefilters 0.75 --single-tails 0,1 --confidence 0.9,0.7,0.5 --per-category 16 \
    --threads "${THREADS:-1}" --out experiments/2026-11-25-single-tail/decode_untrained.json
