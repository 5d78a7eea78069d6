#!/usr/bin/env bash
# Stage 1c (README.md): the server with the fix against the same server keeping its main thread's OpenMP workers
# (`probe.py --how server --keep-pool`), at batch 1 and 8, three repetitions, the arms taking turns (the kept pool
# first in odd repetitions). Run it alone on the machine (rerun to resume):
#   bash experiments/2026-12-03-serve-gap/ab.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2 HF_HUB_OFFLINE=1
D=experiments/2026-12-03-serve-gap
touch $D/ab.jsonl
for rep in 1 2 3; do
    arms="keep release"
    [ $((rep % 2)) -eq 0 ] && arms="release keep"
    for batch in 1 8; do
        for arm in $arms; do
            flag=""
            [ $arm = keep ] && flag=--keep-pool
            grep -q "\"label\": \"$arm\", \"how\": \"server\", \"batch\": $batch, \"rep\": $rep," $D/ab.jsonl ||
                .venv/bin/python $D/probe.py --how server --batch $batch --rep $rep --label $arm $flag \
                    >> $D/ab.jsonl 2>> $D/ab.log
        done
    done
done
