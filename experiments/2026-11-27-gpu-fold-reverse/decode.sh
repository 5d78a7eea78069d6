#!/usr/bin/env bash
# After read.sh: sampled verify_fold with the lent GPU's lora-fold-reverse at `segments:56:p=0.7` (its widest window
# whose KV at 128 tokens stays <= 0.63, the bar's) on the CPU pilots' long math (experiments/2026-11-26-cpu-pure-kl/
# decode.sh: 60 GSM8K dev prompts at 256 new tokens, T 0.7, top-p 0.9, the same seeds, the base-sampled answers
# reused), drafting as `generate` does. Fixed before the run, as there: it holds if its NLL-per-token and worst-token
# differences from base-sampled are <= 0 by their point estimates; it beats the pilots if both points are below
# mix10's (+0.019, +0.406). NAME [reverse]: the GPU run lora-fold-NAME, whose export is MODEL
# [runs/lora-fold-NAME-export] (the next window's lora-fold-after: NAME=after). Output:
# eval-t256-gsm8k-l60-NAME-w56[.txt] here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-gpu-fold-reverse
NAME=${NAME:-reverse}
MODEL=${MODEL:-runs/lora-fold-$NAME-export}
export MKL_CBWR=AVX2
out=$E/eval-t256-gsm8k-l60-$NAME-w56
[ -s $out/summary.json ] || nice -n 15 .venv/bin/hamburger eval --model $MODEL --sample only \
    --verify-fold segments:56:p=0.7 --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 \
    --threads 2 --tasks gsm8k --limit 60 --max-new-tokens 256 \
    --reuse-base experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60 \
    --out $out > $out.txt 2>&1
