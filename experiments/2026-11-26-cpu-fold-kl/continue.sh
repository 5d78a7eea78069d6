#!/usr/bin/env bash
# The kl_weight 2 arm continued on the CPU (session 30's top CPU run; it plateaued after kl2's 60 steps, README.md):
# the same settings as run.sh's kl2 arm, two threads, niced, a fresh shuffle (seed 6), evaluated every 100 steps,
# resumable (rerun to continue). It starts from kl2's end point (runs/cpu-fold-kl/kl2-export, made by read.sh) or,
# when that is gone, from the committed compact warm start warm_start_delta/ (bf16 embedder + adapters on the GPU warm
# start, no optimizer state; `rebuild.py`); `DELTA=1 bash continue.sh` rewrites that delta from the run's last
# checkpoint. Metrics: kl2-more/metrics.jsonl here.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
E=experiments/2026-11-26-cpu-fold-kl
R=runs/cpu-fold-kl/kl2-more
REBUILD=experiments/2026-11-26-gpu-verify-fold/rebuild.py
export MKL_CBWR=AVX2
mkdir -p runs/cpu-fold-kl
if [ -n "${DELTA:-}" ]; then
    $HB export --model $R/last --out $R-export --dtype bfloat16
    rm -rf $E/warm_start_delta && $PY $REBUILD --delta $R-export $E/warm_start_delta
    exit
fi
if [ -f $R/last/trainer_state.pt ]; then
    nice -n 15 $HB train --out $R --resume
else
    INIT=runs/cpu-fold-kl/kl2-export
    [ -f $INIT/hamburger_config.json ] || { INIT=runs/cpu-fold-kl/kl2-rebuilt; $PY $REBUILD $INIT $E/warm_start_delta; }
    nice -n 15 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml --set init=$INIT \
        --set data=runs/cpu-st/split/train.jsonl --set eval_data=runs/cpu-st/split/val.jsonl \
        --set eval_max_rows=100 --set eval_every=100 --set max_train_steps=1000 --set epochs=1 --set seed=6 \
        --set verify_window=48 --set stop_loss_weight=0 --set kl_weight=2 --set threads=2 --set out=$R
fi > $R.log 2>&1 || true
mkdir -p $E/kl2-more && cp $R/metrics.jsonl $R/config.json $E/kl2-more/
