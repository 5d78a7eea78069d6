#!/usr/bin/env bash
# Measure lora-more against the run it continues (lora-fresh step 436, its committed warm start): compact export,
# the skip-path split on the line's 99 val rows, and the decode curve on 48 dev prompts (16 per category, twice the
# earlier experiments' 24, which could not show 1-point changes) under the token_prob gate.
# Usage: bash experiments/2026-11-24-lora-more/evaluate.sh   (after run.sh, or after stopping it)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-24-lora-more
START=experiments/2026-11-24-lora-fresh/warm_start
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
VAL=runs/cpu/sliding09-split/val.jsonl
export MKL_CBWR=AVX2
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp "export, skip-path split"
rm -rf runs/cpu/lora-more-export
$HB export --model runs/cpu/lora-more/last --out runs/cpu/lora-more-export --dtype bfloat16
cp runs/cpu/lora-more/metrics.jsonl $E/metrics.jsonl
cp runs/cpu/lora-more/config.json $E/train_config.json
$PY benchmarks/skip_path_split.py --model runs/cpu/lora-more-export --data $VAL --threads 2 --out $E/skip_path_split.json
stamp decode curve
$PY benchmarks/decode_fidelity.py --models $START runs/cpu/lora-more-export --gates token_prob \
    --confidence 0.95,0.9,0.7 --per-category 16 --threads 2 --out $E/decode_fidelity.json
stamp done
