#!/usr/bin/env bash
# Step 2 of the README: an arm on dev GSM8K rows 240-359 (session 48's confirmatory prompts), sampled verify_fold at
# the default fold, 256 tokens, three draws, the seeds of every draws arm, reusing session 48's base greedy and
# base-sampled answers there. Skipped when its output exists.
#   bash decode.sh kf-gpu      # this run's adapters as the fold reader (its export, unpacked in runs/gpu-kfa/)
#   bash decode.sh af-reader   # the shipped default model (its own fold reader)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-gpu-keep-fold-after
F=experiments/2026-11-28-full-heads
name=$1
case $name in
    kf-gpu) model=(--model ${KF_MODEL:-runs/gpu-kfa/keep-fold-after-export}) ;;
    af-reader) model=() ;;
    *) echo "unknown arm $name (kf-gpu | af-reader)"; exit 2 ;;
esac
out=$E/eval-rows240-360-$name
export MKL_CBWR=AVX2  # as the decodes it is paired with
[ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval "${model[@]}" --sample only --draws 3 \
    --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 --confidence "" \
    --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --gsm8k-file $F/gsm8k_dev_240_360.jsonl \
    --limit 120 --reuse-base $F/eval-rows240-360-fh4 --out $out > $out.txt 2>&1
