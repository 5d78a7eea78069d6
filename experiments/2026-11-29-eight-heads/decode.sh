#!/usr/bin/env bash
# The fh8 arm of README: the default model with the eight best-scored full heads, sampled verify_fold on 120 dev GSM8K
# prompts, 256 tokens, three draws (T 0.7, top-p 0.9, the seeds of every draws arm), reusing the base's answers of the
# fh4 run it is paired with; into eval-rowsROWS-fh8, skipped when done:
#   ROWS=360 bash decode.sh   # dev rows 360-479, paired with ../2026-11-28-full-head-cache/eval-rows360-480-fh4
#   ROWS=240 bash decode.sh   # dev rows 240-359, paired with ../2026-11-28-full-heads/eval-rows240-360-fh4
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-eight-heads
case $ROWS in
    360) pair=experiments/2026-11-28-full-head-cache; prompts=$pair/gsm8k_dev_360_480.jsonl
         base=$pair/eval-rows360-480-base ;;
    240) pair=experiments/2026-11-28-full-heads; prompts=$pair/gsm8k_dev_240_360.jsonl
         base=$pair/eval-rows240-360-fh4 ;;
    *) echo "unknown ROWS $ROWS" >&2; exit 2 ;;
esac
out=$E/eval-rows$ROWS-$((ROWS + 120))-fh8
export MKL_CBWR=AVX2  # as every draws arm
heads=$(.venv/bin/python experiments/2026-11-28-full-heads/chosen.py 8 |
        .venv/bin/python -c "import json, sys; print(','.join(f'{l}:{g}' for l, g in json.load(sys.stdin)))")
[ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 --confidence "" \
    --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --gsm8k-file $prompts --limit 120 \
    --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 \
    --full-heads "$heads" --reuse-base $base --out $out > $out.txt 2>&1
