#!/usr/bin/env bash
# Issue 19, session 47: a fold reader trained on-policy, on the default model's own sampled verify_fold answers
# (README). Steps, each skipped when its output exists (rerun to resume):
#   1. gen.py: the default model answers the first N (default 320) of session 44's 560 training prompts, sampled;
#   2. `hamburger segment` (sliding 0.9, as sr) and long_rows.py (answers of >= 100 tokens);
#   3. sr's training step exactly (../2026-11-28-sampled-reader/train_reader.sh), one pass over the long rows (their
#      count // 8 steps);
#   4. the shipped model with those adapters as its sampled-only fold reader, decoded by
#      ../2026-11-27-draws/run.sh ROWS120=1 (arm op).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=experiments/2026-11-28-on-policy runs=runs/on-policy n=${N:-320}
mkdir -p $runs
[ "$(wc -l < $runs/answers.jsonl 2>/dev/null || echo 0)" -ge $n ] || nice -n 5 .venv/bin/python $here/gen.py \
    runs/sampled-reader/prompts.jsonl $runs/answers.jsonl $n 2> $runs/gen.log
[ -s $runs/segmented.jsonl.meta.json ] || nice -n 5 .venv/bin/hamburger segment --data $runs/answers.jsonl \
    --strategy sliding --sliding-p 0.9 --out $runs/segmented.jsonl --threads 2 > $runs/segment.log 2>&1
[ -s $runs/train-long.jsonl ] || .venv/bin/python experiments/2026-11-27-keep-fold-full/long_rows.py \
    $runs/segmented.jsonl $runs/train-long.jsonl
bash experiments/2026-11-28-sampled-reader/train_reader.sh $runs/train-long.jsonl $runs/train \
    $(( $(wc -l < $runs/train-long.jsonl) / 8 ))
mkdir -p $here/train && cp $runs/train/metrics.jsonl $runs/train/config.json $here/train/
[ -f $runs/export/hamburger_config.json ] || .venv/bin/hamburger export --model $runs/train/last --out $runs/export
[ -f $runs/dm-op/fold_reader.safetensors ] || .venv/bin/hamburger export --model hamburger/default_model \
    --out $runs/dm-op --fold-reader $runs/export --fold-reader-sampled-only
ROWS120=1 MODEL=$runs/dm-op NAME=op bash experiments/2026-11-27-draws/run.sh
