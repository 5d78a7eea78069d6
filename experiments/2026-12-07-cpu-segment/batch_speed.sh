#!/usr/bin/env bash
# `hamburger segment` on the CPU at two batch sizes, on the 128 greedy rows 2001-2128 (fp32, the threads torch takes
# by default: 2 here). Stop any other torch job first.
#   bash batch_speed.sh > batch-speed-HOST.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
T=$(mktemp -d)
zcat data/distilled/smollm2-135m-instruct.train.jsonl.gz | sed -n 2001,2128p > $T/rows.jsonl
cp data/distilled/smollm2-135m-instruct.train.jsonl.meta.json $T/rows.jsonl.meta.json
for b in ${BATCHES:-8 32}; do
    rm -f $T/out.jsonl*
    echo "batch $b: $(HF_HUB_OFFLINE=1 .venv/bin/hamburger segment --data $T/rows.jsonl --out $T/out.jsonl \
        --batch-size $b 2>&1 | grep 'tokens/s')"
done
rm -rf $T
