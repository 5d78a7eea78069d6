#!/usr/bin/env bash
# Teacher-forced skip-path splits (benchmarks/skip_path_split.py) of the GPU warm start read in each layout, no
# training, on the CPU A/B's val rows (runs/cpu-st/split/val.jsonl, made by
# experiments/2026-11-25-cpu-single-tail-ab/run.sh): one JSON per layout. Skipped when the JSON exists.
set -euo pipefail
cd "$(dirname "$0")"
main() {
    local PY=${PY:-../../.venv/bin/python} W=../2026-11-25-gpu-v2-two-sets/warm_start
    export MKL_CBWR=AVX2
    mkdir -p teacher_forced
    for layout in 0 1 1f 1f2 1f3; do
        [ -s teacher_forced/$layout.json ] || $PY ../../benchmarks/skip_path_split.py --model $W \
            --data ../../runs/cpu-st/split/val.jsonl --layout $layout --threads 1 --out teacher_forced/$layout.json \
            > /dev/null 2>&1
    done
}
main "$@"
