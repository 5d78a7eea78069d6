#!/usr/bin/env bash
# The confirmatory test (README): fh4 on 120 dev GSM8K prompts no arm has decoded (dev rows 240-359), 256 tokens,
# three draws, with the base's greedy and sampled answers to them decoded in the same run (base-sampled: the three
# draws' seeds as every draws arm). Then the table: python experiments/2026-11-28-full-heads/confirm.py
#   bash confirm.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-full-heads
out=$E/eval-rows240-360-fh4
export MKL_CBWR=AVX2  # as every draws arm
[ -s $E/gsm8k_dev_240_360.jsonl ] || .venv/bin/python -c "
import json
from hamburger.data.prompts import build_prompts
rows = build_prompts(['gsm8k'], 'dev', seed=0)[240:360]
print('\n'.join(json.dumps({'id': r['id'], 'question': r['prompt'], 'answer': r['answer']}) for r in rows))
" > $E/gsm8k_dev_240_360.jsonl
FULL_HEADS=$(.venv/bin/python $E/chosen.py 4)
export FULL_HEADS
[ -s $out/summary.json ] || nice -n 10 .venv/bin/python $E/heads.py eval --sample only --draws 3 \
    --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 --confidence "" \
    --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k --gsm8k-file $E/gsm8k_dev_240_360.jsonl \
    --limit 120 --out $out > $out.txt 2>&1
