#!/usr/bin/env bash
# Issue 19, CPU: the gated-LoRA line (lora-more step 831) continued under `lora_scope: merged_and_after` (a second
# adapter set, starting at zero, at the single slots after a row's first merge) on distilled rows 14,001-16,135,
# the last ones no run has seen. Every step resumes; rerun to continue. Then measure with:
#   python benchmarks/skip_path_split.py --model RUN/last --data runs/cpu/sliding09-split/val.jsonl
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
export MKL_CBWR=AVX2
[ "$(wc -l < runs/cpu/sliding09-all.jsonl 2>/dev/null || echo 0)" -ge 16000 ] || \
    DATA_ONLY=1 bash experiments/2026-11-24-lora-fresh/run.sh 16135
if [ ! -s runs/cpu/last-split/train.jsonl ]; then
    sed -n '14000,$p' runs/cpu/sliding09-all.jsonl > runs/cpu/last.jsonl   # line 14,000 = distilled row 14,001
    cp runs/cpu/sliding09-all.jsonl.meta.json runs/cpu/last.jsonl.meta.json
    $PY recipes/split_dataset.py runs/cpu/last.jsonl runs/cpu/last-split
fi
OUT=runs/cpu/lora-two-sets
if [ -f "$OUT/last/trainer_state.pt" ]; then
    nice -n 2 $HB train --out "$OUT" --resume
else
    nice -n 2 $HB train --config configs/smollm2-lora-merged-more-cpu.yaml --set lora_scope=merged_and_after \
        --set init=experiments/2026-11-24-lora-more/warm_start --set data=runs/cpu/last-split/train.jsonl \
        --set out=$OUT --set eval_every=100
fi
