#!/usr/bin/env bash
# The pre-registered arm (README): the shipped default model, sampled verify_fold at the default fold with the KV
# budget kv=0.65, its copy sources protected (keep_eval.py), decoded as ../2026-11-27-draws/run.sh decoded af-kv65
# (ROWS120=1: dev rows 120-239, three draws, the same seeds, base-sampled's draws reused), into
# ../2026-11-27-draws/eval-rows120-240-NAME (default content65). Skipped when its output exists.
#   bash decode.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
D=experiments/2026-11-27-draws
G=experiments/2026-11-27-growing-first
out=$D/eval-rows120-240-${NAME:-content65}
export MKL_CBWR=AVX2  # as the decodes it is paired with
[ -s $out/summary.json ] || nice -n 10 .venv/bin/python experiments/2026-11-28-copy-keep/keep_eval.py eval \
    --model hamburger/default_model --sample only --draws 3 \
    --verify-fold ${FOLD:-segments:60:0.45:first:steps=8:p=0.7:kv=0.65} --verify-confidence 0.3 \
    --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --limit 60 \
    --gsm8k-file $G/gsm8k_dev_120_240.jsonl --limit 120 --reuse-base $D/eval-rows120-240-s45 --out $out > $out.txt 2>&1
