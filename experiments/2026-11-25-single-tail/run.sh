#!/usr/bin/env bash
# Issue 19, CPU: the line's warm start (experiments/2026-11-24-cpu-v2-continue/warm_start, trained with one slot per
# group) continued with single_tail 1: every fed group's last token takes its own slot after a merged slot of the rest,
# so the next group's first token is read off a one-token slot. Same data, objective and split as the line
# (configs/smollm2-lora-merged-v2-cpu.yaml), one thread, niced, resumable: rerun to continue. The first eval (step 0)
# is the warm start read in the new layout, untrained.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
export MKL_CBWR=AVX2
[ "$(wc -l < runs/cpu/sliding09-all.jsonl 2>/dev/null || echo 0)" -ge 16000 ] || \
    DATA_ONLY=1 nice -n 10 bash experiments/2026-11-24-lora-fresh/run.sh 16135
[ -s runs/cpu/all-split/train.jsonl ] || $PY recipes/split_dataset.py runs/cpu/sliding09-all.jsonl runs/cpu/all-split
OUT=${OUT:-runs/cpu/single-tail}
if [ -f "$OUT/last/trainer_state.pt" ]; then
    nice -n 10 $HB train --out "$OUT" --resume
else
    nice -n 10 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml \
        --set init="${WARM:-experiments/2026-11-24-cpu-v2-continue/warm_start}" --set single_tail=1 \
        --set seed="${SEED:-8}" --set lr_base=2.5e-5 --set lr_grafted=6e-5 --set min_lr=5e-6 --set out="$OUT"
fi
