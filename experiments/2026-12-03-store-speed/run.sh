#!/usr/bin/env bash
# The store's speed (README.md): `sim.py` on the code of session 56 (OLD, commit 7812c35, unpacked from git; BASE=...
# another commit) and on this tree (NEW), three repetitions taking turns (old first in odd repetitions, new first in
# even ones), each a fresh process timing lossless verify and verify_fold at batch 1 and 8. Run it alone on the
# machine (rerun to resume: a (label, rep) already in sim.jsonl is skipped):
#   bash experiments/2026-12-03-store-speed/run.sh
# Stage 2 (the store of all layers in one tensor against stage 1's code with its fix):
#   BASE=365cc83 OUT=sim-2 bash experiments/2026-12-03-store-speed/run.sh
# Stage 3 (session 59's reading straight into attention's buffer, at batch 1, 4 and 8, against session 58's code):
#   BASE=9a9042c OUT=sim-3 BATCHES=1,4,8 bash experiments/2026-12-03-store-speed/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2 HF_HUB_OFFLINE=1
D=experiments/2026-12-03-store-speed
OLD=$(mktemp -d)
git archive "${BASE:-7812c35}" hamburger | tar -x -C "$OLD"
touch $D/${OUT:-sim}.jsonl
BATCHES=${BATCHES:-1,8}
records=$(( 2 * $(echo "$BATCHES" | tr ',' '\n' | wc -l) ))  # a process's records: its batch sizes x 2 modes
for rep in 1 2 3; do
    labels="old new"
    [ $((rep % 2)) -eq 0 ] && labels="new old"
    for label in $labels; do
        code=$PWD
        [ $label = old ] && code=$OLD
        [ "$(grep -c "\"label\": \"$label\", \"rep\": $rep," $D/${OUT:-sim}.jsonl)" -ge $records ] ||
            .venv/bin/python $D/sim.py --code "$code" --label $label --rep $rep --batch-sizes "$BATCHES" \
                >> $D/${OUT:-sim}.jsonl 2>> $D/${OUT:-sim}.log
    done
done
rm -rf "$OLD"
