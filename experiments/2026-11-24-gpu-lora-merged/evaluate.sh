#!/usr/bin/env bash
# Measure the GPU continuation (warm_start/) against the CPU line's best, the run it started from
# (experiments/2026-11-24-lora-more/warm_start): the skip-path split on the line's 99 val rows, and the decode curve
# on the 48 dev prompts (16 per category) under the token_prob gate, the same measurements as lora-more's.
# Usage: bash experiments/2026-11-24-gpu-lora-merged/evaluate.sh   (CPU, ~25 min; needs runs/cpu/sliding09-split,
# which experiments/2026-11-24-lora-fresh/run.sh builds)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-24-gpu-lora-merged
START=experiments/2026-11-24-lora-more/warm_start
PY=${PY:-.venv/bin/python}
VAL=runs/cpu/sliding09-split/val.jsonl
export MKL_CBWR=AVX2
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp skip-path split
$PY benchmarks/skip_path_split.py --model $E/warm_start --data $VAL --threads 2 --out $E/skip_path_split.json
$PY benchmarks/skip_path_split.py --model $START --data $VAL --threads 2 --out $E/skip_path_split_start.json
stamp decode curve
$PY benchmarks/decode_fidelity.py --models $START $E/warm_start --gates token_prob \
    --confidence 0.95,0.9,0.7,0.5 --per-category 16 --threads 2 --out $E/decode_fidelity.json
$PY benchmarks/equal_tau.py $E/decode_fidelity.json:$START $E/decode_fidelity.json:$E/warm_start | tee $E/equal_tau.txt
stamp done
