#!/usr/bin/env bash
# Check 2: speed and bytes, greedy, batch 1: HF `generate`, lossless verify and verify_fold (the shipped fold,
# `DEFAULT_FOLD`) on the bench's 2 prompts per category (8), at 128 and at 256 new tokens, 3 repetitions, the median
# kept (`hamburger bench` interleaves the methods). Run it alone on the machine (skipped when done):
#   bash experiments/2026-12-03-default-mode/speed.sh
# NAME=speed-s59: the same on a later tree, into speed-s59-128/ and speed-s59-256/ (session 59's refresh).
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-12-03-default-mode
N=${NAME:-speed}
for n in 128 256; do
    [ -s $E/$N-$n/results.json ] && grep -q '"summary"' $E/$N-$n/results.json && continue
    .venv/bin/hamburger bench --methods hf_generate,verify,verify_fold --n-prompts 2 --max-new-tokens $n \
        --repeats 3 --lengths '' --batch-sizes '' --threads 2 --out $E/$N-$n > $E/$N-$n.log 2>&1
done
