#!/usr/bin/env bash
# After run.sh: each arm's end point (and their common start, lora-verify-fold) read teacher-forced in verify_fold's
# layout on the 80 long dev answers (experiments/2026-11-26-fold-policies/reading.py) at `segments:48:p=0.7`, the
# merged folding whose KV at 128 tokens matches the training-free default fold's. Outputs: reading-NAME.json/.txt here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-cpu-fold-kl
export MKL_CBWR=AVX2
for arm in kl2 kl05; do
    [ -f runs/cpu-fold-kl/$arm-export/hamburger_config.json ] || .venv/bin/hamburger export \
        --model runs/cpu-fold-kl/$arm/last --out runs/cpu-fold-kl/$arm-export --dtype bfloat16
done
for name in start kl2 kl05 ${MORE:+kl2-more}; do  # MORE=1: continue.sh's end point too (after `DELTA=1 continue.sh`)
    model=runs/cpu-fold-kl/$name-export; [ $name = start ] && model=runs/lvf-rebuilt
    [ -s $E/reading-$name.txt ] || .venv/bin/python experiments/2026-11-26-fold-policies/reading.py --model $model \
        --name $name --policies segments:48:p=0.7 > $E/reading-$name.txt 2> /dev/null
    mv experiments/2026-11-26-fold-policies/reading-$name.json $E/ 2>/dev/null || true
done
