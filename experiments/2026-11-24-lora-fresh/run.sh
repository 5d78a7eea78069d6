#!/usr/bin/env bash
# Issue 19, CPU: the gated-LoRA line continued on distilled answers it has never seen
# (configs/smollm2-lora-merged-fresh-cpu.yaml). Every step resumes; rerun to continue.
# Two runs side by side, 1 thread each, on the same rows from the same warm start: adapters at merged slots
# (lora-fresh) and from a row's first merge on (lora-fresh-after, `lora_scope: after_merge`).
# Usage: bash experiments/2026-11-24-lora-fresh/run.sh [ROWS]   (ROWS: distilled rows to segment, default 7000;
#        DATA_ONLY=1 stops after the data steps)
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
ROWS=${1:-7000}
SEEN=2207            # the first 2,207 segmented rows trained the earlier runs of the line (sliding09-split)
export MKL_CBWR=AVX2
D=data/distilled/smollm2-135m-instruct.train.jsonl
[ -s "$D" ] || zcat "$D.gz" > "$D"
mkdir -p runs/cpu
# The committed segmented rows are the first 1,951 distilled answers (same base, same order): start from them.
if [ ! -s runs/cpu/segmented.jsonl ]; then
    cp data/segmented/smollm2-135m-instruct.train.jsonl runs/cpu/segmented.jsonl
    cp data/segmented/smollm2-135m-instruct.train.jsonl.meta.json runs/cpu/segmented.jsonl.meta.json
fi
nice -n 5 $HB segment --data "$D" --out runs/cpu/segmented.jsonl --limit "$ROWS" --batch-size 16 --dtype bfloat16 --threads 2
rm -f runs/cpu/sliding09-all.jsonl
$HB segment --from-dataset runs/cpu/segmented.jsonl --strategy sliding --sliding-p 0.9 --out runs/cpu/sliding09-all.jsonl
part() {  # part NAME LINE_FILTER: a slice of sliding09-all with its meta, split 1 in 20 into train / val
    sed -n "$2" runs/cpu/sliding09-all.jsonl > runs/cpu/$1.jsonl
    cp runs/cpu/sliding09-all.jsonl.meta.json runs/cpu/$1.jsonl.meta.json
    $PY recipes/split_dataset.py runs/cpu/$1.jsonl runs/cpu/$1-split
}
part sliding09 "1,${SEEN}p"          # the earlier runs' rows: their 99 val rows are the line's eval
part fresh "$((SEEN + 1)),\$p"      # rows the line has never seen: the train rows of this run
[ -z "${DATA_ONLY:-}" ] || exit 0   # DATA_ONLY=1: the data steps only
run() {  # OUT [--set ...]: train, or resume where it stopped
    if [ -f "$1/last/trainer_state.pt" ]; then
        nice -n 2 $HB train --out "$1" --resume --set loss_chunk=512
    else
        nice -n 2 $HB train --config configs/smollm2-lora-merged-fresh-cpu.yaml --set out="$1" "${@:2}"
    fi
}
run runs/cpu/lora-fresh > runs/cpu/lora-fresh.log 2>&1 &
run runs/cpu/lora-fresh-after --set lora_scope=after_merge > runs/cpu/lora-fresh-after.log 2>&1 &
wait
