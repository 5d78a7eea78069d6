#!/usr/bin/env bash
# Session 67's check of the step-0 lines (README.md, arm writer): gentle's settings (base_mode lora) with today's
# code, an eval before and after one step on the same 60 rows; its metrics go to step0-check/metrics.jsonl.
#   bash step0.sh    (~2 min, 2 threads; needs run.sh's data in runs/cpu-lora-fold/data)
set -euo pipefail
cd "$(dirname "$0")/../.."
X=experiments/2026-12-05-cpu-lora-fold R=runs/cpu-lora-fold
rm -rf $R/step0-check
.venv/bin/hamburger train --config configs/smollm2-lora-merged-more-cpu.yaml --model hamburger/default_model \
    --data $R/data/train.jsonl --out $R/step0-check --set eval_data=$R/data/val.jsonl --set eval_max_rows=60 \
    --set single_tail=1 --set fold_tail=2 --set lr_grafted=0 --set epochs=1 --set threads=2 --set save_every=0 \
    --set eval_every=60 --set lr_base=2.5e-5 --set kl_weight=2 --set eval_on_start=true --set max_train_steps=1 \
    --set progress=false
mkdir -p $X/step0-check && cp $R/step0-check/metrics.jsonl $X/step0-check/
grep '"kind": "eval"' $X/step0-check/metrics.jsonl
