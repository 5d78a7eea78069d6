#!/usr/bin/env bash
# Step 3 of the README: the teacher-forced reading of the 80 fixed 256-token dev answers at verify_fold's default
# fold and with nothing folded (../2026-11-26-fold-policies/reading.py), as ../2026-11-27-keep-fold-full/read.sh
# reads its arms. Output: reading-kf-gpu.txt and .json here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-gpu-keep-fold-after
export MKL_CBWR=AVX2
nice -n 5 .venv/bin/python experiments/2026-11-26-fold-policies/reading.py \
    --model ${KF_MODEL:-runs/gpu-kfa/keep-fold-after-export} --name kf-gpu --threads ${THREADS:-2} \
    --policies segments:100000,segments:60:0.45:first:steps=8:p=0.7 > $E/reading-kf-gpu.txt
mv experiments/2026-11-26-fold-policies/reading-kf-gpu.json $E/
