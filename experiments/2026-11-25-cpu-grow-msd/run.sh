#!/usr/bin/env bash
# Issue 19, item 5 (the micro-step decoder's depth), CPU: does a deeper MSD read merged slots better? One run from
# experiments/2026-11-25-gpu-v2-two-sets/warm_start with its 2-layer MSD grown to 4 (`grow_decoder: 4`: each trained
# layer is followed by a copy whose attention and MLP output projections are zeroed, so step 0 computes exactly what
# the warm start does), trained in the merged layout with everything else as the control of
# experiments/2026-11-25-cpu-single-tail-ab/ (the same config, init, rows, seed, rates and batches): that run is this
# A/B's control, step for step. Niced, resumable (rerun to continue); THREADS sets the torch threads (results
# change by rounding only).
# STAGE_MSD=1 bash run.sh: the capacity probe in stage msd instead: experiments/2026-11-25-cpu-msd-context/'s control
# (all distilled answers, a chain at every 2nd token, unmerged features, KL 1) with the MSD grown to 4 layers; that
# run's control (runs/msdctx/control, the same config, seed and batches) is its control.
set -euo pipefail
main() {  # (in a function: bash reads it whole before running it, so editing this file mid-run changes nothing)
    cd "$(dirname "$0")/../.."
    HB=${HB:-.venv/bin/hamburger}
    export MKL_CBWR=AVX2
    D=runs/cpu-st  # the single-tail A/B's rows (its run.sh makes them): same split, same val rows
    mkdir -p runs/cpu-grow
    if [ -n "${STAGE_MSD:-}" ]; then
        OUT=runs/cpu-grow/msd-grow4
        [ -s runs/msdctx/split/val.jsonl ] || { echo "make the rows first: bash experiments/2026-11-25-cpu-msd-context/run.sh" >&2; exit 1; }
        if [ -f "$OUT/last/trainer_state.pt" ]; then
            nice -n 15 $HB train --out "$OUT" --resume --set threads="${THREADS:-1}" >> runs/cpu-grow/msd-grow4.log 2>&1
        else
            nice -n 15 $HB train --config configs/smollm2-msd-context-cpu.yaml --set msd_context=0 --set grow_decoder=4 \
                --set threads="${THREADS:-1}" --out "$OUT" >> runs/cpu-grow/msd-grow4.log 2>&1
        fi
        exit 0
    fi
    OUT=runs/cpu-grow/grow4
    [ -s $D/split/val.jsonl ] || { echo "make the rows first: bash experiments/2026-11-25-cpu-single-tail-ab/run.sh" >&2; exit 1; }
    if [ -f "$OUT/last/trainer_state.pt" ]; then
        nice -n 15 $HB train --out "$OUT" --resume --set threads="${THREADS:-1}" >> runs/cpu-grow/grow4.log 2>&1
    else
        nice -n 15 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml \
            --set init=experiments/2026-11-25-gpu-v2-two-sets/warm_start --set data=$D/split/train.jsonl \
            --set eval_data=$D/split/val.jsonl --set eval_max_rows=100 --set eval_every=100 --set epochs=2 \
            --set grow_decoder=4 --set threads="${THREADS:-1}" --set out="$OUT" >> runs/cpu-grow/grow4.log 2>&1
    fi
}
main "$@"
