#!/usr/bin/env bash
# The README's steps in order, one after the other on the 2 cores (run in the background; each step is skipped when
# its output exists): waits for step 1 (started by hand), then step 2's two arms, the reading, and rows 0-119.
set -uo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-gpu-keep-fold-after
while pgrep -f "eval-rows120-240-kf-gpu" > /dev/null; do sleep 30; done
bash $E/decode.sh kf-gpu
bash $E/decode.sh af-reader
bash $E/read.sh
MODEL=${KF_MODEL:-runs/gpu-kfa/keep-fold-after-export} NAME=kf-gpu bash experiments/2026-11-27-draws/run.sh
