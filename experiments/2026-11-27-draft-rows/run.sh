#!/usr/bin/env bash
# Issue 19 (serving): `hamburger serve`'s verify modes draft only in forwards of at most `--draft-rows` rows (3 on a
# CPU), chosen when a forward of 4 positions cost about as much as one of 2-3 (AMD EPYC, MKL_CBWR=AVX2). After the
# lean forward's cheaper parts on this Intel Xeon a plain batch of 4 rows already pays MKL's step at 4 rows
# (../2026-11-27-step-profile/forward_cost.json), so does drafting in fuller batches pay now? Load tests
# (benchmarks/load_test.py): 16 chat/GSM8K dev prompts sent at once, 128 new tokens, greedy, 2 threads, fp32, MKL's
# own choice; server batch 4 and 8, verify with --draft-rows 3 (the default), 4 and 8, and mode hamburger at its knob
# 1.0 (the base's own decoding, one token per row). OFFSET (default 8): dev prompts 8.. of each category (choosing);
# OFFSET=0 the serve benchmark's own prompts (reporting). Records: OFFSET/NAME-bBATCH.json (a record there is kept).
set -euo pipefail
cd "$(dirname "$0")/../.."
OFFSET=${OFFSET:-8}
D=experiments/2026-11-27-draft-rows/offset$OFFSET
mkdir -p $D
run() {  # NAME BATCH ARGS...: one load test unless its record exists
    local name=$1 b=$2
    shift 2
    [ -s $D/$name-b$b.json ] || .venv/bin/python benchmarks/load_test.py --model default --prompts dev \
        --offset "$OFFSET" --clients 16 --max-batch-size $b --max-tokens 128 "$@" --out $D/$name-b$b.json \
        > $D/$name-b$b.log 2>&1
}
for b in 4 8; do
    run hamburger $b --mode hamburger
    for rows in 3 4 8; do
        [ "$rows" -le "$b" ] && run verify-d$rows $b --mode verify --draft-rows $rows
    done
done
