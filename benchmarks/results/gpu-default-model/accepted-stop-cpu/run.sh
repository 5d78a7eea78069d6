#!/usr/bin/env bash
# Fine-tune the GPU frozen model (runs/gpu/frozen-export, from recipes/gpu-default-model.sh) for 70 steps on
# the CPU with stop_target accepted, lr 1e-4, 70 steps of 16 rows drawn from runs/default-data/train.jsonl
# (recipes/default-model.sh steps 3-5: 1859 rows, none of them validation rows), then calibrate on the same 24
# validation prompts as ../calibration-*. ~25 min on a 2-core CPU.
set -e
cd "$(dirname "$0")/../../../.."
export PATH=$PWD/.venv/bin:$PATH HF_HUB_OFFLINE=1
hamburger train --config configs/smollm2-gpu-frozen.yaml --data runs/default-data/train.jsonl \
  --eval-data runs/default-data/val.jsonl --out runs/cpu-accepted --set init=runs/gpu/frozen-export \
  --set stop_target=accepted --set lr_grafted=1e-4 --set min_lr=1e-5 --set warmup_steps=5 --set batch_size=16 \
  --set max_train_steps=70 --set kl_weight=0 --set eval_max_rows=60 --set eval_every=0 --set save_every=10 \
  --set log_every=10 --set threads=2 --set device=cpu --set seed=2
hamburger export --model runs/cpu-accepted/last --out runs/cpu-accepted-export --dtype float32
hamburger eval --model runs/cpu-accepted-export --tasks chat --chat-file runs/gpu/val_prompts.jsonl --limit 24 \
  --max-new-tokens 96 --confidence 0.5,0.6,0.7,0.8,0.9 --threads 2 --out runs/cpu-accepted-calibration
