#!/usr/bin/env bash
# Issue 19, CPU (no GPU lent, session 26): does more training in verify-fold's layout keep lowering the folded
# reading's spikes (reading.py)? The GPU's lora-verify-fold model (trained at W 16; rebuilt by
# experiments/2026-11-26-gpu-verify-fold/rebuild.py) trained on in that layout alone at verify-fold's own window, W 32
# (`verify_window: 32`: every token its own slot, predicted by the base; no stop loss), on the CPU A/B rows of
# experiments/2026-11-25-cpu-single-tail-ab/run.sh (runs/cpu-st/split), the CPU rates of
# configs/smollm2-lora-merged-v2-cpu.yaml, 2 threads, niced, resumable (rerun to continue), eval every 50 steps.
# Metrics: cpu_fold32/metrics.jsonl (copied from the run when it ends or is rerun). Without the run's full checkpoint
# (runs/ is not in git) it starts again, with a fresh schedule, from the committed compact warm start
# cpu_fold32/warm_start_delta (the embedder, adapters and config of its last checkpoint, bf16; the micro-step decoder
# and stop head are the GPU model's: no loss reaches them), into runs/cpu-fold32-ws (metrics:
# cpu_fold32/metrics-ws.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
E=experiments/2026-11-26-fold-policies
R=runs/cpu-fold32
export MKL_CBWR=AVX2
INIT=runs/gpu-s24/lora-verify-fold-export
WS=$E/cpu_fold32/warm_start_delta
METRICS=$E/cpu_fold32/metrics.jsonl DELTA=()  # (DELTA: rebuild.py's default, the GPU model's)
if [ ! -f "$R/last/trainer_state.pt" ] && [ -f $WS/hamburger_config.json ]; then
    R=runs/cpu-fold32-ws INIT=runs/cpu-fold32-warm-start METRICS=$E/cpu_fold32/metrics-ws.jsonl DELTA=("$WS")
fi
[ -f $INIT/hamburger_config.json ] || .venv/bin/python experiments/2026-11-26-gpu-verify-fold/rebuild.py $INIT "${DELTA[@]}"
mkdir -p $E/cpu_fold32
[ ! -f $R/metrics.jsonl ] || cp $R/metrics.jsonl $METRICS
if [ -f "$R/last/trainer_state.pt" ]; then
    nice -n 15 $HB train --out "$R" --resume || true
else
    nice -n 15 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml --set init=$INIT \
        --set data=runs/cpu-st/split/train.jsonl --set eval_data=runs/cpu-st/split/val.jsonl --set eval_max_rows=100 \
        --set eval_every=50 --set verify_window=32 --set stop_loss_weight=0 --set threads=2 --set epochs=1 \
        --set out="$R" || true
fi
cp $R/metrics.jsonl $METRICS
