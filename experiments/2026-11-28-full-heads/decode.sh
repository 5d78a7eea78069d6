#!/usr/bin/env bash
# The pre-registered full-head arms (README), decoded as ../2026-11-27-draws/run.sh decoded af-reader (ROWS120=1:
# dev rows 120-239, three draws, the same seeds, base-sampled's draws reused) into
# ../2026-11-27-draws/eval-rows120-240-NAME, through heads.py with the HEADS best-scored heads of scores.jsonl
# full. Skipped when its output exists. (The KV-matched control af-kv59 has no full heads: run.sh decodes it.)
#   bash decode.sh                                               # fh4
#   MODEL=runs/keep-fold/dm-noreader NAME=fh4-base bash decode.sh  # fh4 read by the base (no fold reader)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-full-heads
D=experiments/2026-11-27-draws
G=experiments/2026-11-27-growing-first
out=$D/eval-rows120-240-${NAME:-fh4}
export MKL_CBWR=AVX2  # as the decodes it is paired with
FULL_HEADS=$(.venv/bin/python $E/chosen.py ${HEADS:-4})
export FULL_HEADS
[ -s $out/summary.json ] || nice -n 10 .venv/bin/python $E/heads.py eval ${MODEL:+--model $MODEL} --sample only \
    --draws 3 --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 \
    --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --limit 60 \
    --gsm8k-file $G/gsm8k_dev_120_240.jsonl --limit 120 --reuse-base $D/eval-rows120-240-s45 --out $out > $out.txt 2>&1
