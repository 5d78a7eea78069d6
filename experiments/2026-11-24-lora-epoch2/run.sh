#!/usr/bin/env bash
# Issue 19, CPU: the gated-LoRA line (lora-more step 831) on a second pass over every distilled answer, re-cut at
# sliding 0.7. Every step resumes; rerun to continue. Then measure with
#   python benchmarks/skip_path_split.py --model RUN/last --data runs/cpu/sliding09-split/val.jsonl
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
export MKL_CBWR=AVX2
[ "$(wc -l < runs/cpu/sliding09-all.jsonl 2>/dev/null || echo 0)" -ge 16000 ] || \
    DATA_ONLY=1 bash experiments/2026-11-24-lora-fresh/run.sh 16135
# split by a hash of the row id, as every split of the line: its val rows hold the line's 99 eval rows
[ -s runs/cpu/all-split/train.jsonl ] || $PY recipes/split_dataset.py runs/cpu/sliding09-all.jsonl runs/cpu/all-split
OUT=runs/cpu/lora-epoch2
if [ -f "$OUT/last/trainer_state.pt" ]; then
    nice -n 2 $HB train --out "$OUT" --resume
elif [ -d experiments/2026-11-24-lora-epoch2/warm_start ]; then  # the full checkpoint is gone: its committed copy
    nice -n 2 $HB train --config configs/smollm2-lora-merged-epoch2-cpu.yaml \
        --set init=experiments/2026-11-24-lora-epoch2/warm_start
else
    nice -n 2 $HB train --config configs/smollm2-lora-merged-epoch2-cpu.yaml
fi
