#!/usr/bin/env bash
# msd_chains windows against groups: the two 300-step runs side by side, one thread each (the 2-core machine holds
# both), then the skip-path split of each on the line's 99 val rows. Every run resumes; rerun to continue.
# Usage: bash experiments/2026-11-24-windows-ab/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-24-windows-ab
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
export MKL_CBWR=AVX2 OMP_NUM_THREADS=1
[ "$(wc -l < runs/cpu/sliding09-all.jsonl 2>/dev/null || echo 0)" -ge 16000 ] || \
    DATA_ONLY=1 bash experiments/2026-11-24-lora-fresh/run.sh 16135
[ -s runs/cpu/all-split/train.jsonl ] || $PY recipes/split_dataset.py runs/cpu/sliding09-all.jsonl runs/cpu/all-split
train() {  # name
    local out=runs/cpu/ab-$1
    if [ -f "$out/last/trainer_state.pt" ]; then $HB train --out "$out" --resume; else $HB train --config "$E/$1.yaml"; fi
}
train groups > runs/cpu/ab-groups.log 2>&1 &
train windows > runs/cpu/ab-windows.log 2>&1 &
wait
for name in groups windows; do
    cp runs/cpu/ab-$name/metrics.jsonl $E/metrics_$name.jsonl
    $PY benchmarks/skip_path_split.py --model runs/cpu/ab-$name/last --data runs/cpu/sliding09-split/val.jsonl \
        --threads 1 --out $E/skip_path_split_$name.json &
done
wait
