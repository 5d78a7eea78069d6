#!/usr/bin/env bash
# Check 2 of README: 120 fresh chat dev prompts (positions 240-359 of the bench's chat dev prompts), 256 tokens, the
# base greedy and three sampled draws of the base and of the candidate fold; into eval-chat240-360, skipped when done.
#   bash experiments/2026-11-29-default-bits/fresh.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-default-bits
F=$E/chat_dev_240_360.jsonl
export MKL_CBWR=AVX2  # as every draws arm
[ -s $F ] || .venv/bin/python -c "
import json
from hamburger.bench.prompts import category_prompts
for r in category_prompts('chat', 360, seed=1)[240:]:
    print(json.dumps({'id': r['id'], 'prompt': r['prompt']}))
" > $F
[ -s $E/eval-chat240-360/summary.json ] || nice -n 10 .venv/bin/hamburger eval --sample only --draws 3 \
    --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks chat --chat-file $F --limit 120 \
    --verify-fold segments:60:0.45:none:bits=4 --verify-confidence 0.3 --verify-lookup 10 \
    --out $E/eval-chat240-360 > $E/eval-chat240-360.txt 2>&1
