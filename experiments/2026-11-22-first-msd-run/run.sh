#!/usr/bin/env bash
# First end-to-end run on real data: the cheap micro-decoder stage (frozen base) on the ~1000
# self-distilled rows made in session 1, then the chat agreement eval on dev prompts.
set -euo pipefail
cd "$(dirname "$0")/../.."
EXP=experiments/2026-11-22-first-msd-run
python recipes/split_dataset.py data/segmented/smollm2-135m-instruct.train.jsonl runs/first-msd-data
hamburger train --config configs/smollm2-msd.yaml --data runs/first-msd-data/train.jsonl \
    --eval-data runs/first-msd-data/val.jsonl --out runs/first-msd \
    --set threads=1 --set batch_size=16 --set max_train_steps=30 --set warmup_steps=5 --set save_every=10 \
    --set eval_every=0 --set log_every=5
cp runs/first-msd/metrics.jsonl $EXP/metrics.jsonl
hamburger eval --model runs/first-msd/last --tasks chat --limit 8 --confidence 0.5,0.8 \
    --max-new-tokens 64 --threads 1 --out $EXP/eval
