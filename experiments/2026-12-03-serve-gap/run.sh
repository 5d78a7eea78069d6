#!/usr/bin/env bash
# Stage 1 (README.md): `probe.py` four ways (engine, thread, scheduler, server) at batch 1 and 8, three repetitions,
# the order of the four reversed in even repetitions, each a fresh process. Run it alone on the machine (rerun to
# resume: a (how, batch, rep) already in the output is skipped):
#   bash experiments/2026-12-03-serve-gap/run.sh                   # stage 1: probe.jsonl
# Stage 1b, the fix: thread and scheduler hand back the main thread's OpenMP workers first (`--release`), and the
# server (this tree's) does it itself; engine runs as before, as the control:
#   OUT=release RELEASE=1 bash experiments/2026-12-03-serve-gap/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2 HF_HUB_OFFLINE=1
D=experiments/2026-12-03-serve-gap
O=$D/${OUT:-probe}
touch $O.jsonl
for rep in 1 2 3; do
    hows="engine thread scheduler server"
    [ $((rep % 2)) -eq 0 ] && hows="server scheduler thread engine"
    for batch in 1 8; do
        for how in $hows; do
            flag=""
            [ -n "${RELEASE:-}" ] && [ $how != engine ] && [ $how != server ] && flag=--release
            grep -q "\"how\": \"$how\", \"batch\": $batch, \"rep\": $rep," $O.jsonl ||
                .venv/bin/python $D/probe.py --how $how --batch $batch --rep $rep $flag >> $O.jsonl 2>> $O.log
        done
    done
done
