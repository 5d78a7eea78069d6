#!/usr/bin/env bash
# Issue 19, CPU: train the folding single-tail layout (`single_tail: 1`, `fold_tail: true`) from the GPU warm start,
# as the single-tail A/B trained its arms (experiments/2026-11-25-cpu-single-tail-ab/run.sh: same config, init, rows,
# seed and batches; one thread, niced, resumable: rerun to continue). Its control is that A/B's control arm (one slot
# per group), whose metrics are committed there. Eval on start (the layout alone, untrained) and every 100 steps on the
# same 100 val rows. Needs runs/cpu-st/split (made by the A/B's run.sh). `FOLD=2 bash run.sh`: fold_tail 2 (the GPU
# top job's layout, `RUNS=lora-fold`) in runs/cpu-st/fold2.
set -euo pipefail
cd "$(dirname "$0")/../.."
main() {
    local HB=${HB:-.venv/bin/hamburger} D=runs/cpu-st FOLD=${FOLD:-1}
    local OUT=$D/fold$([ "$FOLD" = 1 ] || echo "$FOLD")
    export MKL_CBWR=AVX2
    [ -s $D/split/val.jsonl ] || { echo "run experiments/2026-11-25-cpu-single-tail-ab/run.sh first (the rows)"; exit 1; }
    if [ -f "$OUT/last/trainer_state.pt" ]; then
        nice -n 15 $HB train --out "$OUT" --resume ${MORE:-}
    else
        nice -n 15 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml \
            --set init=experiments/2026-11-25-gpu-v2-two-sets/warm_start --set data=$D/split/train.jsonl \
            --set eval_data=$D/split/val.jsonl --set eval_max_rows=100 --set eval_every=100 --set epochs=2 \
            --set single_tail=1 --set fold_tail="$FOLD" --set out="$OUT"
    fi
}
main "$@"
