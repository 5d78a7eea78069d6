#!/usr/bin/env bash
# The lent GPU's lora-fold-reverse (gpu_run/: lora-verify-fold's warm start, verify-fold's layout at window 48, no
# cross-entropy on the data's tokens, the KL to the base reversed, 286 steps of 32k positions on an H200) read
# teacher-forced in verify_fold's layout on the 80 long dev answers (experiments/2026-11-26-fold-policies/reading.py)
# at windows 48-60, with the sampling columns, against the recipe's bar (KL < 0.051, spikes <= 12, KV at 128 <= 0.63)
# and the CPU pilots' table (experiments/2026-11-26-cpu-pure-kl/summary.txt). MODEL: its export (unpacked from the
# call's NAME.tar.part*; rebuilt from delta/ by `rebuild.py runs/lora-fold-reverse-export delta` when gone).
# Output: reading-reverse.json/.txt here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-gpu-fold-reverse
MODEL=${MODEL:-runs/lora-fold-reverse-export}
export MKL_CBWR=AVX2
[ -s $E/reading-reverse.txt ] || nice -n 15 .venv/bin/python experiments/2026-11-26-fold-policies/reading.py \
    --model $MODEL --name reverse \
    --policies segments:48:p=0.7,segments:52:p=0.7,segments:56:p=0.7,segments:60:p=0.7 \
    > $E/reading-reverse.txt 2> /dev/null
mv experiments/2026-11-26-fold-policies/reading-reverse.json $E/ 2>/dev/null || true
