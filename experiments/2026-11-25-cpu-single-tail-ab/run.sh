#!/usr/bin/env bash
# Issue 19, CPU: does training in the single-tail layout move the teacher-forced figures, before a GPU window spends
# its minutes on it (recipes/lent-gpu/README.md, RUNS=lora-single-tail)? Two runs from the same warm start
# (experiments/2026-11-25-gpu-v2-two-sets/warm_start, trained with one slot per group), the same rows, seed and
# rates, one thread each, niced, resumable (rerun to continue): single_tail 1 against 0 (the control).
# Rows: the committed segmented answers (data/segmented, the first 1,951 distilled rows, with their entropies) cut at
# sliding 0.9 and split 1 in 20 by recipes/split_dataset.py, the same hash as the GPU runs' split, so the val rows
# were never trained on. Eval on start (the layout alone) and every 100 steps.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
export MKL_CBWR=AVX2
D=runs/cpu-st
mkdir -p $D
if [ ! -s $D/split/val.jsonl ]; then
    $HB segment --from-dataset data/segmented/smollm2-135m-instruct.train.jsonl --strategy sliding --sliding-p 0.9 \
        --out $D/sliding09.jsonl
    $PY recipes/split_dataset.py $D/sliding09.jsonl $D/split
fi
run() {  # NAME SINGLE_TAIL
    if [ -f "$D/$1/last/trainer_state.pt" ]; then
        nice -n 15 $HB train --out "$D/$1" --resume
    else
        nice -n 15 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml \
            --set init=experiments/2026-11-25-gpu-v2-two-sets/warm_start --set data=$D/split/train.jsonl \
            --set eval_data=$D/split/val.jsonl --set eval_max_rows=100 --set eval_every=100 --set epochs=2 \
            --set single_tail="$2" --set out="$D/$1"
    fi
}
run single-tail 1 > $D/single-tail.log 2>&1 &
run control 0 > $D/control.log 2>&1 &
wait
