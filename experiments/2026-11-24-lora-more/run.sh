#!/usr/bin/env bash
# Issue 19, CPU: the gated-LoRA line (lora-fresh step 436, experiments/2026-11-24-lora-fresh/warm_start) continued on
# distilled answers 7,001-14,000 in one epoch at half the peak learning rates (configs/smollm2-lora-merged-more-cpu.yaml).
# Every step resumes; rerun to continue. Usage: bash experiments/2026-11-24-lora-more/run.sh [--data-only]
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
export MKL_CBWR=AVX2
# The data: the first 14,000 distilled answers segmented by the base's entropies, re-cut sliding 0.9 (the earlier
# experiment's script does it, resuming its segmentation), then rows 7,001-14,000, split 1 in 20 into train / val.
[ "$(wc -l < runs/cpu/sliding09-all.jsonl 2>/dev/null || echo 0)" -ge 13999 ] || \
    DATA_ONLY=1 bash experiments/2026-11-24-lora-fresh/run.sh 14000
if [ ! -s runs/cpu/more-split/train.jsonl ]; then
    sed -n '7000,$p' runs/cpu/sliding09-all.jsonl > runs/cpu/more.jsonl
    cp runs/cpu/sliding09-all.jsonl.meta.json runs/cpu/more.jsonl.meta.json
    $PY recipes/split_dataset.py runs/cpu/more.jsonl runs/cpu/more-split
fi
[ "${1:-}" != "--data-only" ] || exit 0
OUT=runs/cpu/lora-more
if [ -f "$OUT/last/trainer_state.pt" ]; then
    nice -n 2 $HB train --out "$OUT" --resume
else
    nice -n 2 $HB train --config configs/smollm2-lora-merged-more-cpu.yaml
fi
