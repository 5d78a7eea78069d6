#!/usr/bin/env bash
# Issue 19, CPU: can one set of adapters read both layouts? The lent GPU's lora-verify-fold model (rebuild.py) reads
# verify-fold's layout well and HAMburger's own merged groups badly; train it with both layouts mixed
# (`verify_window_every: 2`: every 2nd step in verify-fold's layout at W 16, the others in the ordinary one, stop loss
# on those) on the CPU A/B rows of experiments/2026-11-25-cpu-single-tail-ab/run.sh (runs/cpu-st/split; the val rows
# were never trained on by any run), the CPU rates of configs/smollm2-lora-merged-v2-cpu.yaml, 2 threads, niced,
# resumable (rerun to continue). Eval at the start and every 50 steps, in both layouts (the "window" entry).
# Metrics: cpu_mixed/metrics.jsonl (copied from the run). Without the run's full checkpoint (runs/ is not in git), it
# starts again from the committed compact warm start cpu_mixed/warm_start (bf16, step 410, no optimizer state) with a
# fresh schedule, into runs/cpu-mixed-ws (its metrics: cpu_mixed/metrics-ws.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
E=experiments/2026-11-26-gpu-verify-fold
R=runs/cpu-mixed
export MKL_CBWR=AVX2
[ -f runs/gpu-s24/lora-verify-fold-export/hamburger_config.json ] || .venv/bin/python $E/rebuild.py runs/gpu-s24/lora-verify-fold-export
WS=$E/cpu_mixed/warm_start
[ -f "$R/last/trainer_state.pt" ] || [ ! -f $WS/hamburger_config.json ] || R=runs/cpu-mixed-ws
settings=(--config configs/smollm2-lora-merged-v2-cpu.yaml --set data=runs/cpu-st/split/train.jsonl
          --set eval_data=runs/cpu-st/split/val.jsonl --set eval_max_rows=100 --set eval_every=50
          --set verify_window=16 --set verify_window_every=2 --set threads=2 --set out="$R")
if [ -f "$R/last/trainer_state.pt" ]; then
    nice -n 15 $HB train --out "$R" --resume
elif [ "$R" = runs/cpu-mixed-ws ]; then
    nice -n 15 $HB train "${settings[@]}" --set init=$WS --set epochs=1
else
    nice -n 15 $HB train "${settings[@]}" --set init=runs/gpu-s24/lora-verify-fold-export --set epochs=2
fi
if [ "$R" = runs/cpu-mixed-ws ]; then cp $R/metrics.jsonl $E/cpu_mixed/metrics-ws.jsonl
else mkdir -p $E/cpu_mixed && cp $R/metrics.jsonl $R/config.json $E/cpu_mixed/; fi
