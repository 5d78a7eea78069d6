#!/usr/bin/env bash
# Issue 19, CPU: the shipped default model v2 (the gated-LoRA line after the lent H100) continued in the background on
# one thread, niced (configs/smollm2-lora-merged-v2-cpu.yaml). Every step resumes; rerun to continue. Where the full
# checkpoint is gone (a fresh machine), the committed bf16 warm start of the run carries on with a fresh schedule.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
HERE=experiments/2026-11-24-cpu-v2-continue
export MKL_CBWR=AVX2
# every distilled answer, cut by the base's entropies (resumes), split 1 in 20 by id as every split of the line
[ "$(wc -l < runs/cpu/sliding09-all.jsonl 2>/dev/null || echo 0)" -ge 16000 ] || \
    DATA_ONLY=1 nice -n 10 bash experiments/2026-11-24-lora-fresh/run.sh 16135
[ -s runs/cpu/all-split/train.jsonl ] || $PY recipes/split_dataset.py runs/cpu/sliding09-all.jsonl runs/cpu/all-split
# Since session 15 at a fifth of the config's learning rates (session 14's run at the config's rates lost ground;
# session 15's at these held it): runs/cpu/v2-lowlr. OUT=runs/cpu/v2-continue resumes session 14's run instead.
OUT=${OUT:-runs/cpu/v2-lowlr}
if [ -f "$OUT/last/trainer_state.pt" ]; then
    nice -n 10 $HB train --out "$OUT" --resume
elif [ -d $HERE/warm_start ]; then  # SEED: a new order of the rows for each fresh start (session 14: 6, 15: 7)
    nice -n 10 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml --set init=$HERE/warm_start \
        --set seed="${SEED:-8}" --set lr_base=1e-5 --set lr_grafted=3e-5 --set min_lr=2e-6 --set out="$OUT"
else
    nice -n 10 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml
fi
