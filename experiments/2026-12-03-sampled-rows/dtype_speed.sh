#!/usr/bin/env bash
# The draw's distillation in bf16 and fp32 on the same 32 prompts (draw 4's prompts 3489-3520): wall seconds each, with
# the CPU's vector extensions, so a session can tell which dtype its host runs faster. (Session 74's host had AVX2 and
# no AVX-512; session 73's runs made ~134 tok/s in bf16.) Stop the background draw first.
#   bash experiments/2026-12-03-sampled-rows/dtype_speed.sh > experiments/2026-12-03-sampled-rows/dtype-speed-HOST.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
tmp=$(mktemp -d)
sed -n 3489,3520p data/prompts/train-sampled-s4.jsonl > "$tmp/prompts.jsonl"
. experiments/2026-12-03-sampled-rows/host.sh
echo "torch $(.venv/bin/python -c 'import torch; print(torch.__version__)'), 2 threads, batch 32, 256 new tokens"
for dtype in float32 bfloat16; do
    start=$(date +%s.%N)
    "$HB" distill --prompts "$tmp/prompts.jsonl" --out "$tmp/$dtype.jsonl" --temperature 0.7 --top-p 0.9 --seed 1 \
        --batch-size 32 --dtype $dtype --threads 2 --max-new-tokens 256 > /dev/null 2>&1
    tokens=$(.venv/bin/python -c "import json,sys; print(sum(len(json.loads(l)['response_token_ids']) \
        for l in open(sys.argv[1])))" "$tmp/$dtype.jsonl" 2>/dev/null || echo "?")
    echo "$dtype: $(echo "$(date +%s.%N) - $start" | bc) s, $tokens response tokens"
done
rm -rf "$tmp"
