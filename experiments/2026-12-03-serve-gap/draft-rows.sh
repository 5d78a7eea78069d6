#!/usr/bin/env bash
# Stage 3 (README.md): with the server's OpenMP fix, does drafting pay in fuller batches? `benchmarks/load_test.py` on
# dev prompts 8.. of each category (`--offset 8`, not stage 2's), 16 at once, 128 tokens, greedy, 2 threads, fp32,
# at server batch 4 and 8: verify with `--draft-rows` 3 (the default), 4 and 8, and mode hamburger at its knob 1.0
# (the base's own decoding). Three repetitions, the order of the four reversed in the second. Run it alone on the
# machine (each record skipped when done):
#   bash experiments/2026-12-03-serve-gap/draft-rows.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2
for rep in 1 2 3; do
    D=experiments/2026-12-03-serve-gap/draft-rows-$rep
    mkdir -p $D
    runs="d3 d4 d8 hamburger"
    [ $rep -eq 2 ] && runs="hamburger d8 d4 d3"
    for b in 4 8; do
        for run in $runs; do
            case $run in
                hamburger) args="--mode hamburger" ;;
                *) args="--mode verify --draft-rows ${run#d}" ;;
            esac
            [ -s $D/$run-b$b.json ] || .venv/bin/python benchmarks/load_test.py --model default --prompts dev \
                --offset 8 --clients 16 --max-batch-size $b --max-tokens 128 $args --out $D/$run-b$b.json \
                > $D/$run-b$b.log 2>&1
        done
    done
done
