#!/usr/bin/env bash
# Issue 19: how well the base reads verify-fold's layout before any training in it, teacher-forced: the trainer's
# start-of-run eval (`hamburger train --set verify_window=W`: every token its own slot, predicted by the base, each
# entropy segment of the data folded into one merged slot W tokens after its end; packing.window_folds) on the
# fold-tail CPU A/B's 92 val rows (runs/cpu-st/split, made by experiments/2026-11-25-cpu-single-tail-ab/run.sh), for
# the GPU warm start at W = 8, 16 and 32, and 100000 (no answer is that long: nothing folds, the base itself). One
# training step each (the eval at step 0 is the number; the run itself is a smoke test of the layout on real rows).
# Metrics: verify_window_reading/W.jsonl. One thread, niced. INIT=CHECKPOINT reads another model (its metrics go to
# OUT_DIR, default verify_window_reading-NAME/ here, NAME the checkpoint folder's name).
set -euo pipefail
cd "$(dirname "$0")/../.."
INIT=${INIT:-experiments/2026-11-25-gpu-v2-two-sets/warm_start}
D=experiments/2026-11-26-verify-speed/verify_window_reading
[ "$INIT" = experiments/2026-11-25-gpu-v2-two-sets/warm_start ] || D=${OUT_DIR:-$D-$(basename "$INIT")}
mkdir -p $D
for W in ${WINDOWS:-8 16 32 100000}; do
    [ -s $D/$W.jsonl ] && continue
    rm -rf runs/verify-window-$W
    OMP_NUM_THREADS=1 nice -n 15 .venv/bin/hamburger train --config configs/smollm2-lora-merged-v2-cpu.yaml \
        --set init=$INIT --set data=runs/cpu-st/split/train.jsonl \
        --set eval_data=runs/cpu-st/split/val.jsonl --set eval_max_rows=100 --set eval_every=1000 \
        --set verify_window=$W --set stop_loss_weight=0 --set max_train_steps=1 --set save_every=1000 \
        --set out=runs/verify-window-$W > /dev/null 2>&1
    grep '"eval"' runs/verify-window-$W/metrics.jsonl | head -1 > $D/$W.jsonl
done
