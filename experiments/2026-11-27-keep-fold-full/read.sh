#!/usr/bin/env bash
# Step 1 of the judgement (README): the teacher-forced reading of the 80 fixed 256-token dev answers at verify_fold's
# default fold and with nothing folded (../2026-11-26-fold-policies/reading.py), for the shipped model (NAME default)
# and for an arm's export (NAME=ARM: runs/keep-fold/ARM-export, exported here from its last checkpoint when missing).
# Output: reading-keep-NAME.txt and .json here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-keep-fold-full
NAME=${NAME:-default}
export MKL_CBWR=AVX2
model=()
if [ "$NAME" != default ]; then
    [ -f runs/keep-fold/$NAME-export/hamburger_config.json ] || .venv/bin/hamburger export \
        --model runs/keep-fold/$NAME/last --out runs/keep-fold/$NAME-export
    model=(--model runs/keep-fold/$NAME-export)
fi
nice -n 5 .venv/bin/python experiments/2026-11-26-fold-policies/reading.py "${model[@]}" --name keep-$NAME \
    --threads ${THREADS:-2} --policies segments:100000,segments:60:0.45:first:steps=8:p=0.7 > $E/reading-keep-$NAME.txt
mv experiments/2026-11-26-fold-policies/reading-keep-$NAME.json $E/
