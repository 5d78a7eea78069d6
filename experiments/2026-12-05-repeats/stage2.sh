#!/usr/bin/env bash
# README.md's stage 2: the CPU reader runs' warm starts (the shipped model with their adapters) measured as question 2
# in the folding layout (result-1f2-NAME.{md,json}), then paired with the shipped model (compare-NAME.md).
# Needs run.sh's validation rows (runs/repeats/data/val.jsonl). Env: PY [.venv/bin/python], THREADS [2].
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python} X=experiments/2026-12-05-repeats R=runs/repeats
export PYTHONPATH=$PWD
for name in gentle gentle2; do
    M=$R/model-$name
    [ -f $M/hamburger_config.json ] || { rm -rf $M && cp -r hamburger/default_model $M &&
        cp experiments/2026-12-05-cpu-lora-fold/warm_start/$name/lora.safetensors $M/; }
    [ -s $X/result-1f2-$name.json ] || $PY $X/measure.py --model $M --data $R/data/val.jsonl --layout 1f2 \
        --threads ${THREADS:-2} --out $X/result-1f2-$name.json > $X/result-1f2-$name.md
    $PY $X/compare.py $X/result-1f2-$name.json $X/result-1f2.json > $X/compare-$name.md
    cat $X/compare-$name.md
done
