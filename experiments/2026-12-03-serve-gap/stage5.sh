#!/usr/bin/env bash
# Stage 5 (README.md): where verify_fold loses time under serve at batch 8. probe.py's engine, scheduler (--release,
# as the server does) and server ways, in both modes (labelled by mode), three repetitions, the order of the six
# reversed in even ones, each a fresh process. Run it alone on the machine (rerun to resume):
#   bash experiments/2026-12-03-serve-gap/stage5.sh && python experiments/2026-12-03-serve-gap/summary.py stage5
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2 HF_HUB_OFFLINE=1
D=experiments/2026-12-03-serve-gap
O=$D/stage5
touch $O.jsonl
RUNS="verify:engine verify:scheduler verify:server verify_fold:engine verify_fold:scheduler verify_fold:server"
for rep in 1 2 3; do
    runs=$RUNS
    [ $((rep % 2)) -eq 0 ] && runs=$(echo $RUNS | tr ' ' '\n' | tac | tr '\n' ' ')
    for run in $runs; do
        mode=${run%%:*} how=${run##*:}
        flag=""
        [ $how = scheduler ] && flag=--release
        grep -q "\"label\": \"$mode\", \"how\": \"$how\", \"batch\": 8, \"rep\": $rep," $O.jsonl ||
            .venv/bin/python $D/probe.py --how $how --batch 8 --rep $rep --mode $mode --label $mode $flag \
                >> $O.jsonl 2>> $O.log
    done
done
