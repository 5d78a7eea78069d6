#!/usr/bin/env bash
# Issue 19, item 5: is there a better micro-token gate than the MSD's own probability in the signals decoding has?
# Teacher-forced probe (probe.py) on the 92 held-out merged rows of experiments/2026-11-25-cpu-single-tail-ab/
# (runs/cpu-st/split/val.jsonl, made by that run.sh), the GPU warm start, read in the folded layout (1f2) and the
# paper's (0). One thread, a few minutes each.
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2
E=experiments/2026-11-25-learned-gate
for layout in 1f2 0; do
    .venv/bin/python $E/probe.py --model experiments/2026-11-25-gpu-v2-two-sets/warm_start \
        --data runs/cpu-st/split/val.jsonl --layout $layout --out $E/probe_$layout.json
done > $E/probe.log 2>&1
