#!/usr/bin/env bash
# Issue 19, session 44: sampled verify_fold at the default fold with off-top tokens kept in their slots (`:offtop`),
# read by the default model exactly (runs/keep-fold/dm-reader: the shipped model, its fold reader for sampled rows;
# ../2026-11-27-keep-fold-full/reader_speed.sh NAME=reader builds it). The rule is in README.md, fixed before any run.
# A step is skipped when its output exists.
#   STEP=1: the test: 256 tokens, GSM8K dev rows 120-239, three draws, paired with ../2026-11-27-draws/'s af-reader;
#   STEP=2: reported: 96 tokens, the first 120 chat + 120 GSM8K dev prompts, one draw, paired with
#           ../2026-11-27-keep-fold-full/eval-sampled-t96-l120-reader (the same reader, seeds and settings);
#   STEP=3: reported: 256 tokens, GSM8K dev rows 0-119, three draws, paired with ../2026-11-27-draws/'s af-warm.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-offtop
K=experiments/2026-11-27-keep-fold-full
FOLD=segments:60:0.45:first:steps=8:p=0.7:offtop
MODEL=runs/keep-fold/dm-reader
export MKL_CBWR=AVX2
case ${STEP:-1} in
1) ROWS120=1 MODEL=$MODEL NAME=offtop FOLD=$FOLD bash experiments/2026-11-27-draws/run.sh ;;
2) out=$E/eval-sampled-t96-l120-offtop
   [ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --model $MODEL --verify-fold $FOLD \
       --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 --sample only \
       --tasks chat,gsm8k --limit 120 --max-new-tokens 96 \
       --reuse-base experiments/2026-11-26-sampled-fold/eval-dev-t96-l120 --out $out > $out.txt 2>&1 ;;
3) MODEL=$MODEL NAME=offtop FOLD=$FOLD bash experiments/2026-11-27-draws/run.sh ;;
*) echo "unknown STEP ${STEP} (1 | 2 | 3)"; exit 2 ;;
esac
