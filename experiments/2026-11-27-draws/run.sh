#!/usr/bin/env bash
# Issue 19, session 39: sampled verify_fold on 256-token GSM8K dev answers with three draws per prompt
# (`hamburger eval --draws 3`), so the per-prompt sampling spread that made single-draw comparisons across sessions
# differ by ~0.25 nats of worst token (../2026-11-27-kv-budget/) averages out. Arms, fixed before any ran: the default
# fold s45 (`segments:60:0.45:first:steps=8:p=0.7`), its KV budget kv65 (`...:kv=0.65`) and the 128-token window
# w128 (`segments:128:first:steps=8:p=0.7`): three points of the KV-quality curve. Dev rows 0-59 and 60-119 with the
# base's answers and base-sampled draw 0 of ../2026-11-26-long-math-60/ and ../2026-11-27-gpu-fold-reverse/ (the
# prompts, seeds and settings of every earlier sampled long-math run); the first arm decodes base-sampled's draws 1 and
# 2, the later arms reuse them. A step is skipped when its output exists.
#   bash run.sh                                                   # s45
#   FOLD=segments:60:0.45:first:steps=8:p=0.7:kv=0.65 NAME=kv65 bash run.sh
#   FOLD=segments:128:first:steps=8:p=0.7 NAME=w128 bash run.sh
#   ROWS120=1 bash run.sh                                         # s45 on the fresh dev rows 120-239
#   MODEL=runs/keep-fold/lora-export NAME=kf-lora bash run.sh     # another checkpoint (session 40: ../2026-11-27-
#                                                                 # keep-fold-full/), at FOLD, reusing s45's base draws
# Since session 43 the default model reads sampled rows' folds with its fold reader: the s45 runs here (no MODEL) were
# the base's reading; to decode that reading again, use MODEL=runs/keep-fold/dm-noreader (../2026-11-27-keep-fold-full/
# reader_speed.sh NAME=noreader builds it).
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-draws
FOLD=${FOLD:-segments:60:0.45:first:steps=8:p=0.7}
NAME=${NAME:-s45}
export MKL_CBWR=AVX2  # as the earlier decodes of these prompts ran
MORE=experiments/2026-11-27-gpu-fold-reverse
decode() {  # ROWS FIRST-REUSE TASK-ARGS...: the later arms reuse s45's run (base-sampled's three draws)
    local out=$E/eval-$1-$NAME reuse=$2
    [ "$NAME" = s45 ] || reuse=$E/eval-$1-s45
    shift 2
    [ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval ${MODEL:+--model $MODEL} --sample only --draws 3 \
        --verify-fold $FOLD --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 \
        --max-new-tokens 256 --tasks gsm8k --limit 60 "$@" --reuse-base $reuse --out $out > $out.txt 2>&1
}
if [ -z "${ROWS120:-}" ]; then
    decode rows0-60 experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60
    decode rows60-120 $MORE/eval-t256-gsm8k-more-default --gsm8k-file $MORE/gsm8k_dev_60_120.jsonl
else  # ROWS120=1 (after the result on rows 0-119): dev rows 120-239, the base's answers of session 33's stage 2 there
    G=experiments/2026-11-27-growing-first
    decode rows120-240 $G/eval-rows120-240-default --gsm8k-file $G/gsm8k_dev_120_240.jsonl --limit 120
fi
