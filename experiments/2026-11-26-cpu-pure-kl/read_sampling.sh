#!/usr/bin/env bash
# After decode.sh showed pure's better forward KL buys little in sampled decodes: the readings with reading.py's
# sampling-aware columns (reverse KL, the sampled NLL gap, sampled spikes; added this session) for the training-free
# default fold on the shipped model (with `segments:100000`, nothing folded: every gap must be 0) and for pure at
# the decoded window 56 (and ARMS=... more end points of run.sh). Output: reading-sampling-NAME.json/.txt here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-cpu-pure-kl
R=experiments/2026-11-26-fold-policies
FOLD=segments:60:first:steps=8:p=0.7  # DEFAULT_FOLD when this ran (sessions 28-32)
export MKL_CBWR=AVX2
read_one() {  # NAME MODEL POLICIES
    [ -s $E/reading-sampling-$1.txt ] || nice -n 15 .venv/bin/python $R/reading.py ${2:+--model $2} \
        --name sampling-$1 --policies $3 > $E/reading-sampling-$1.txt 2> /dev/null
    mv $R/reading-sampling-$1.json $E/ 2>/dev/null || true
}
read_one default "" segments:100000,$FOLD
for arm in pure ${ARMS:-}; do read_one $arm runs/cpu-pure-kl/$arm-export segments:56:p=0.7; done
