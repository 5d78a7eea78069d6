#!/usr/bin/env bash
# The DDP test (two gloo processes under torchrun) N times while two busy loops load the 2-core CPU, as CI's
# machine may be loaded; counts passes and failures and keeps each failure's log (PYTHONFAULTHANDLER=1 prints
# the Python stack of the process that aborts).
#   bash benchmarks/results/ddp-exit/loop.sh N TAG LOG_DIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
N=$1; TAG=$2; LOGS=$3
mkdir -p "$LOGS"
export PYTHONFAULTHANDLER=1
for i in 1 2; do timeout 3000 python3 -c "while True: pass" & done
trap 'kill $(jobs -p) 2>/dev/null' EXIT
pass=0; fail=0
for i in $(seq 1 "$N"); do
    if .venv/bin/python -m pytest -q -x tests/train/test_train.py -k ddp > "$LOGS/$TAG-$i.log" 2>&1; then
        pass=$((pass + 1)); rm "$LOGS/$TAG-$i.log"
    else
        fail=$((fail + 1))
    fi
    echo "$TAG run $i pass $pass fail $fail" > "$LOGS/$TAG.status"
done
