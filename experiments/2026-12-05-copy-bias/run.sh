#!/usr/bin/env bash
# Every result of README.md: the shipped model in layouts 1f2, 0 and 3 (the check: no merged slot, the base exactly
# at the skip path), and the CPU lora-fold line's warm starts (the shipped model with their adapters) in 1f2, on the
# 92 validation rows that ../2026-12-05-cpu-lora-fold/run.sh makes; lookup_micro.py's file. Then summary.py ->
# summary.md.
#   bash run.sh            (niced, 2 threads; ~2.5 min per file on a 2-core CPU)
#   ARMS="writer=DIR" bash run.sh   also score the checkpoint folder DIR as arm NAME (layout 1f2)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=../.. PY=${PY:-../../.venv/bin/python}
VAL=$ROOT/runs/cpu-lora-fold/data/val.jsonl W=$ROOT/experiments/2026-12-05-cpu-lora-fold/warm_start
[ -s $VAL ] || { echo "no $VAL: run ../2026-12-05-cpu-lora-fold/run.sh first (its data step)" >&2; exit 2; }
score() {  # score NAME MODEL LAYOUT
    [ -s $1-$3.json ] || nice -n 5 $PY copy_bias.py --model $2 --data $VAL --layout $3 --out $1-$3.json
}
with_adapters() {  # with_adapters NAME LORA: the shipped model with other adapters, in $ROOT/runs/copy-bias/cb-NAME
    local d=$ROOT/runs/copy-bias/cb-$1
    [ -f $d/hamburger_config.json ] || { mkdir -p $ROOT/runs/copy-bias && cp -r $ROOT/hamburger/default_model $d &&
        cp $2 $d/lora.safetensors; }
    echo $d
}
for layout in 1f2 0 3; do score shipped $ROOT/hamburger/default_model $layout; done
score s64 "$(with_adapters s64 $W/lora.safetensors)" 1f2
score gentle "$(with_adapters gentle $W/gentle/lora.safetensors)" 1f2
score gentle2 "$(with_adapters gentle2 $W/gentle2/lora.safetensors)" 1f2
for arm in ${ARMS:-}; do score ${arm%%=*} ${arm#*=} 1f2; done
[ -s lookup-shipped-1f2.json ] || nice -n 5 $PY lookup_micro.py --model $ROOT/hamburger/default_model --data $VAL \
    --layout 1f2 --out lookup-shipped-1f2.json
$PY summary.py > summary.md
