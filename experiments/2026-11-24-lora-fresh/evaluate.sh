#!/usr/bin/env bash
# Measure the two runs of run.sh the way the line's earlier runs were measured: compact warm starts, the
# skip-path split on the line's 99 val rows, and the decode curve on 24 dev prompts under both gates.
# Usage: bash experiments/2026-11-24-lora-fresh/evaluate.sh   (after run.sh, or after stopping it)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-24-lora-fresh
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
VAL=runs/cpu/sliding09-split/val.jsonl
export MKL_CBWR=AVX2
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
for run in lora-fresh lora-fresh-after; do
    stamp "$run: export, skip-path split"
    rm -rf runs/cpu/$run-export
    $HB export --model runs/cpu/$run/last --out runs/cpu/$run-export --dtype bfloat16
    cp runs/cpu/$run/metrics.jsonl $E/metrics_$run.jsonl
    cp runs/cpu/$run/config.json $E/train_config_$run.json
    $PY benchmarks/skip_path_split.py --model runs/cpu/$run-export --data $VAL --threads 2 --out $E/skip_path_split_$run.json
done
rm -rf $E/warm_start && cp -r runs/cpu/lora-fresh-export $E/warm_start   # the run the line continues from
stamp decode curve
$PY benchmarks/decode_fidelity.py --models runs/cpu/lora-fresh-export runs/cpu/lora-fresh-after-export \
    --gates token_prob,stop_head --confidence 0.95,0.9,0.7 --threads 2 --out $E/decode_fidelity.json
stamp done
