#!/usr/bin/env bash
# Issue 19, item 5 (the micro-step decoder's inputs), CPU: does the MSD predict tokens 2..4 better when it also reads
# the base's final states at the 8 slots before its features (msd_context: 8)? Two stage-msd runs from the same warm
# start (experiments/2026-11-25-gpu-v2-two-sets/warm_start), the same rows, seed, plan and rates, one thread each,
# niced, resumable (rerun to continue): msd_context 8 against 0 (the control). Rows: all distilled answers as one-token
# groups (stage msd with msd_chains all uses no groups or entropies), split 1 in 20 by recipes/split_dataset.py (the GPU
# runs' hash: the val rows were never trained on). Eval on start and every 100 steps on 80 val rows.
# `MERGED=1 bash run.sh` (after the runs stop): the teacher-forced read on the merged layout's held-out rows
# (runs/cpu-st/split/val.jsonl, made by experiments/2026-11-25-cpu-single-tail-ab/run.sh) of the warm start and both runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
E=experiments/2026-11-25-cpu-msd-context
export MKL_CBWR=AVX2
D=runs/msdctx
mkdir -p $D
if [ -n "${MERGED:-}" ]; then
    for m in warm_start:experiments/2026-11-25-gpu-v2-two-sets/warm_start control:$D/control/last ctx8:$D/ctx8/last; do
        $PY benchmarks/skip_path_split.py --model "${m#*:}" --data runs/cpu-st/split/val.jsonl \
            --out $E/merged-read-${m%%:*}.json
    done
    exit 0
fi
if [ ! -s $D/split/val.jsonl ]; then
    zcat data/distilled/smollm2-135m-instruct.train.jsonl.gz > $D/distilled.jsonl
    cp data/distilled/smollm2-135m-instruct.train.jsonl.meta.json $D/distilled.jsonl.meta.json
    $PY recipes/unsegmented_rows.py $D/distilled.jsonl $D/single.jsonl
    $PY recipes/split_dataset.py $D/single.jsonl $D/split
fi
run() {  # NAME MSD_CONTEXT
    if [ -f "$D/$1/last/trainer_state.pt" ]; then
        nice -n 5 $HB train --out "$D/$1" --resume
    else
        nice -n 5 $HB train --config configs/smollm2-msd-context-cpu.yaml --set msd_context="$2" --out "$D/$1"
    fi
}
run control 0 > $D/control.log 2>&1 &
run ctx8 8 > $D/ctx8.log 2>&1 &
wait
