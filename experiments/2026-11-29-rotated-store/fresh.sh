#!/usr/bin/env bash
# Check 2 of README: the 103 chat dev prompts no arm has decoded (positions 360-462 of the bench's chat dev prompts),
# 256 tokens, the base greedy and three sampled draws of the base and of the candidate; into eval-chat360-463,
# skipped when done.
#   bash experiments/2026-11-29-rotated-store/fresh.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-rotated-store
F=$E/chat_dev_360_463.jsonl
export MKL_CBWR=AVX2  # as every draws arm
[ -s $F ] || .venv/bin/python -c "
import json
from hamburger.bench.prompts import category_prompts
for r in category_prompts('chat', 463, seed=1)[360:]:
    print(json.dumps({'id': r['id'], 'prompt': r['prompt']}))
" > $F
[ -s $E/eval-chat360-463/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 \
    --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks chat --chat-file $F --limit 103 \
    --verify-fold segments:60:0.45:none:bits=8/4:rotate --verify-confidence 0.3 --verify-lookup 10 \
    --out $E/eval-chat360-463 > $E/eval-chat360-463.txt 2>&1
