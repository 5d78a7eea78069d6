#!/usr/bin/env bash
# After run.sh: the end point of ARM (default pure) read teacher-forced in verify_fold's layout on the 80 long dev answers
# (experiments/2026-11-26-fold-policies/reading.py) at `segments:48:p=0.7`, as session 30's arms were
# (experiments/2026-11-26-cpu-fold-kl/read.sh), and at `segments:60:p=0.7`, the training-free default fold's window
# (the lent-GPU recipe's bar judges both). Output: reading-ARM.json/.txt here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-cpu-pure-kl
ARM=${ARM:-pure}
export MKL_CBWR=AVX2
R=runs/cpu-pure-kl/$ARM
[ -f $R-export/hamburger_config.json ] || .venv/bin/hamburger export --model $R/last --out $R-export --dtype bfloat16
[ -s $E/reading-$ARM.txt ] || nice -n 15 .venv/bin/python experiments/2026-11-26-fold-policies/reading.py \
    --model $R-export --name $ARM --policies segments:48:p=0.7,segments:60:p=0.7 > $E/reading-$ARM.txt 2> /dev/null
mv experiments/2026-11-26-fold-policies/reading-$ARM.json $E/ 2>/dev/null || true
