#!/usr/bin/env bash
# The A/B's end points on the CPU line's first 60 eval rows, one thread each, two at a time: the hidden term by layer
# with the eval metrics (layer_profile.py) and the skip path split with the base's view of the choices
# (benchmarks/skip_path_split.py), for the warm start and each arm's last checkpoint.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
E=experiments/2026-11-25-hidden-match
export MKL_CBWR=AVX2 OMP_NUM_THREADS=1
declare -A MODEL=([warm_start]=experiments/2026-11-24-cpu-v2-continue/warm_start [control]=runs/cpu/ab-control/last
                  [hidden20]=runs/cpu/ab-hidden20/last [hidden100]=runs/cpu/ab-hidden100/last)
for name in warm_start control hidden20 hidden100; do
    $PY $E/layer_profile.py "${MODEL[$name]}" $E/layer_profile_$name.json --rows 60 &
    $PY benchmarks/skip_path_split.py --model "${MODEL[$name]}" --data runs/cpu/sliding09-split/val.jsonl --rows 60 \
        --threads 1 --out $E/skip_path_split_$name.json &
    wait
done
