#!/usr/bin/env bash
# The pre-registered curve point (README): the shipped default model, sampled verify_fold at the default fold, with
# folded rows drawing at temperature GUARD_T (default 0.5; guarded_eval.py), decoded as ../2026-11-27-draws/run.sh
# decodes its arms on dev rows 120-239 (ROWS120=1: three draws, the seeds of af-reader's decodes, base-sampled's draws
# reused), into ../2026-11-27-draws/eval-rows120-240-NAME (default guard-t05). Skipped when its output exists.
#   bash decode.sh                          # T 0.5
#   GUARD_T=0.6 NAME=guard-t06 bash decode.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
D=experiments/2026-11-27-draws
G=experiments/2026-11-27-growing-first
out=$D/eval-rows120-240-${NAME:-guard-t05}
export MKL_CBWR=AVX2 GUARD_T=${GUARD_T:-0.5}
[ -s $out/summary.json ] || nice -n 10 .venv/bin/python experiments/2026-11-28-tail-guard/guarded_eval.py eval \
    --sample only --draws 3 --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 \
    --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --limit 60 \
    --gsm8k-file $G/gsm8k_dev_120_240.jsonl --limit 120 --reuse-base $D/eval-rows120-240-s45 --out $out > $out.txt 2>&1
