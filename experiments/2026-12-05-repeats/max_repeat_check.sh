#!/usr/bin/env bash
# Question 3's setting on real rows, once (session 69): one training step of the lora-fold arm's config with
# `max_repeat: 0.5` from the shipped model, on the 92 validation rows run.sh cuts (remade by run.sh when gone).
# Writes max-repeat-check.log: the trainer's line saying how many rows it kept, and its exit status.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger} X=experiments/2026-12-05-repeats V=runs/repeats/data/val.jsonl O=runs/repeats/max-repeat-check
[ -s $V ] || { echo "no $V: run $X/run.sh first"; exit 2; }
rm -rf $O
rc=0
$HB train --config configs/smollm2-gpu-lora-merged.yaml --data $V --eval-data $V --out $O \
    --set init=hamburger/default_model --set single_tail=1 --set fold_tail=2 --set max_repeat=0.5 \
    --set max_train_steps=1 --set max_tokens=2048 --set eval_max_rows=4 --set warmup_steps=1 --set device=cpu \
    --set dtype=fp32 --set threads=2 --set progress=false 2> $O.err > /dev/null || rc=$?
{ grep "max_repeat" $O.err; echo "rc=$rc"; } > $X/max-repeat-check.log
cat $X/max-repeat-check.log
