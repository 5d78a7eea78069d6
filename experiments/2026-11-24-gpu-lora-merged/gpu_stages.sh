#!/usr/bin/env bash
# The four training stages this experiment ran on a lent H100 (30 minutes of device time, 2026-11-24), in order.
# Each stage starts from the previous stage's bf16 export (the first from the CPU line's best,
# experiments/2026-11-24-lora-more/warm_start) with a fresh schedule; all use configs/smollm2-gpu-lora-merged.yaml
# (gated LoRA at merged slots, KL 0.5, stop_target accepted, recut sliding 0.8 / 0.9 by epoch).
# Stage 1 is the recipe's lora-merged run; stages 2-4 doubled the tokens per step (the GPU had memory to spare:
# 21 GiB at 16k tokens) and shortened the schedules to fit the window. Needs runs/gpu/{train,val}.jsonl:
#   RUNS=data bash recipes/gpu-default-model.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-hamburger}
W=${WORK:-runs/gpu}
C=configs/smollm2-gpu-lora-merged.yaml
stage() {  # NAME INIT [--set k=v ...]
    local out=$W/$1
    [ -f "$out-export/hamburger_config.json" ] && return
    if [ -f "$out/last/trainer_state.pt" ]; then $HB train --out "$out" --resume
    else $HB train --config $C --data $W/train.jsonl --eval-data $W/val.jsonl --out "$out" --set init="$2" "${@:3}"; fi
    $HB export --model "$out/last" --out "$out-export" --dtype bfloat16
}
stage lora-merged experiments/2026-11-24-lora-more/warm_start
stage lora-merged2 $W/lora-merged-export --set epochs=1.5 --set max_tokens=32768 --set seed=1 --set warmup_steps=20 \
    --set save_every=40 --set eval_every=100
stage lora-merged3 $W/lora-merged2-export --set epochs=2 --set max_tokens=32768 --set seed=2 --set warmup_steps=20 \
    --set save_every=40 --set eval_every=100
stage lora-merged4 $W/lora-merged3-export --set epochs=1 --set max_tokens=32768 --set seed=3 --set warmup_steps=10 \
    --set lr_base=1e-4 --set lr_grafted=2.5e-4 --set save_every=20 --set eval_every=100
