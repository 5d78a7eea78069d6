#!/usr/bin/env bash
# README.md's measurements: the data (composition.md) and the shipped model's reading in layouts 0 and 1f2
# (result-LAYOUT.{json,md}). The validation rows are remade from the committed data when runs/repeats/ is gone.
# Env: PY [.venv/bin/python], HB [.venv/bin/hamburger], THREADS [2].
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python} HB=${HB:-.venv/bin/hamburger} X=experiments/2026-12-05-repeats R=runs/repeats
export PYTHONPATH=$PWD
$PY $X/composition.py > $X/composition.md
if [ ! -s $R/data/val.jsonl ]; then
    mkdir -p $R
    $HB segment --from-dataset data/segmented/smollm2-135m-instruct.train.jsonl --out $R/cut.jsonl \
        --strategy sliding --sliding-p 0.9 --max-steps 4
    $PY recipes/split_dataset.py $R/cut.jsonl $R/data
fi
for layout in 0 1f2; do
    $PY $X/measure.py --data $R/data/val.jsonl --layout $layout --threads ${THREADS:-2} \
        --out $X/result-$layout.json > $X/result-$layout.md
    cat $X/result-$layout.md
done
