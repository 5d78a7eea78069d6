#!/usr/bin/env bash
# Measure a finished (or stopped) run of configs/smollm2-lora-merged-recut-cpu.yaml the way the other experiments
# were measured: warm start, skip-path split, micro-token ranking, calibration under both gates, the decode curve.
# Usage: bash experiments/2026-11-23-lora-recut/evaluate.sh [RUN_DIR]   (default runs/cpu/lora-recut)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:-runs/cpu/lora-recut}
E=experiments/2026-11-23-lora-recut
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
VAL=runs/cpu/sliding09-split/val.jsonl
export MKL_CBWR=AVX2
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp export
$HB export --model "$RUN/last" --out $E/warm_start --dtype bfloat16
cp "$RUN/metrics.jsonl" $E/metrics.jsonl
cp "$RUN/config.json" $E/train_config.json
stamp skip-path split
$PY benchmarks/skip_path_split.py --model $E/warm_start --data $VAL --out $E/skip_path_split.json
stamp gate ranking
$PY benchmarks/gate_ranking.py --model $E/warm_start --data $VAL --threads 2 --out $E/gate_ranking.json
for gate in stop_head token_prob; do
    stamp calibrate $gate
    rm -rf runs/cpu/candidate-recut-$gate
    $HB export --model $E/warm_start --out runs/cpu/candidate-recut-$gate --gate $gate
    knobs=$([ $gate = stop_head ] && echo 0.5,0.7,0.8,0.9,1.0 || echo 0.8,0.9,0.95,1.0)
    $HB calibrate --model runs/cpu/candidate-recut-$gate --limit 20 --max-new-tokens 96 --batch-size 8 \
        --confidence $knobs --threads 2 --out runs/cpu/calibrate-recut-$gate | tee $E/calibrate_$gate.txt
    mkdir -p $E/calibration_$gate
    cp runs/cpu/calibrate-recut-$gate/summary.md runs/cpu/calibrate-recut-$gate/summary.json $E/calibration_$gate/
    gzip -c runs/cpu/calibrate-recut-$gate/examples.jsonl > $E/calibration_$gate/examples.jsonl.gz
done
stamp decode curve
$PY benchmarks/decode_fidelity.py --models $E/warm_start --gates stop_head,token_prob --confidence 0.95,0.9,0.8,0.7,0.5 \
    --threads 2 --out $E/decode_fidelity.json
stamp done
