#!/usr/bin/env bash
# The sampled draw's distillation (cpu_distill.sh's settings) at several batch sizes on the same 128 prompts (draw 4's
# prompts 3489-3616): wall seconds and response tokens each, with the CPU's vector extensions, so a session can tell
# which batch size its host runs fastest. Stop (kill -STOP) the background draw first. PROMPTS [128]: how many of the
# prompts from 3489 on (more leave less of the run to its last, draining forwards).
#   DTYPE=bfloat16 BATCHES="32 64 128" bash experiments/2026-12-07-distill-batch/batch_speed.sh > \
#       experiments/2026-12-07-distill-batch/batch-speed-HOST.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
DTYPE=${DTYPE:-bfloat16}
tmp=$(mktemp -d)
PROMPTS=${PROMPTS:-128}
sed -n "3489,$((3488 + PROMPTS))p" data/prompts/train-sampled-s4.jsonl > "$tmp/prompts.jsonl"
. experiments/2026-12-03-sampled-rows/host.sh
echo "torch $(.venv/bin/python -c 'import torch; print(torch.__version__)'), $DTYPE, 2 threads, $PROMPTS prompts, 256 new tokens"
for batch in ${BATCHES:-32 64 128}; do
    start=$(date +%s.%N)
    "$HB" distill --prompts "$tmp/prompts.jsonl" --out "$tmp/$batch.jsonl" --temperature 0.7 --top-p 0.9 --seed 1 \
        --batch-size "$batch" --dtype "$DTYPE" --threads 2 --max-new-tokens 256 > /dev/null 2>&1
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    tokens=$(.venv/bin/python -c "import json,sys; print(sum(len(json.loads(l)['response_token_ids']) \
        for l in open(sys.argv[1])))" "$tmp/$batch.jsonl")
    echo "batch $batch: $seconds s, $tokens response tokens, $(echo "scale=1; $tokens / $seconds" | bc) tokens/s"
done
rm -rf "$tmp"
