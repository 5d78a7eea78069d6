#!/usr/bin/env bash
# Issue 19, session 30, CPU pilot of the next GPU job (`RUNS=lora-fold-kl`): does weighting the KL to the base 4x
# (kl_weight 2 instead of 0.5) lower the KL of the folded reading that sampled verify_fold pays for? Two arms from
# the GPU's lora-verify-fold model (rebuilt from its committed delta), identical but for kl_weight, in verify-fold's
# layout at window 48 (`verify_window: 48`, no stop loss: only the embedder and the merged-slot adapters train), on the
# CPU A/B rows of experiments/2026-11-25-cpu-single-tail-ab/run.sh (runs/cpu-st/split), the CPU rates of
# configs/smollm2-lora-merged-v2-cpu.yaml, STEPS optimizer steps (default 60), one thread each, both arms at once.
# Evaluated at the start and the end on 100 val rows in the same layout (next-token accuracy and KL to the base).
# Fixed before the runs: the GPU job's premise holds on the CPU if kl2's KL falls below the control's at the end
# while its accuracy stays within a point of it; reported either way. Metrics: ARM/metrics.jsonl here.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
E=experiments/2026-11-26-cpu-fold-kl
STEPS=${STEPS:-60}
INIT=runs/lvf-rebuilt
export MKL_CBWR=AVX2
[ -f $INIT/hamburger_config.json ] || .venv/bin/python experiments/2026-11-26-gpu-verify-fold/rebuild.py $INIT
run() {  # ARM KL_WEIGHT
    local out=runs/cpu-fold-kl/$1
    if [ -f $out/last/trainer_state.pt ]; then nice -n 15 $HB train --out $out --resume
    else
        nice -n 15 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml --set init=$INIT \
            --set data=runs/cpu-st/split/train.jsonl --set eval_data=runs/cpu-st/split/val.jsonl \
            --set eval_max_rows=100 --set eval_every=$STEPS --set max_train_steps=$STEPS --set epochs=1 \
            --set verify_window=48 --set stop_loss_weight=0 --set kl_weight=$2 --set threads=1 --set out=$out
    fi > $out.log 2>&1
    mkdir -p $E/$1 && cp $out/metrics.jsonl $out/config.json $E/$1/
}
mkdir -p runs/cpu-fold-kl
run kl2 2 & run kl05 0.5 & wait
