#!/usr/bin/env bash
# Speed of the shipped model v2 with and without a stop-head prefilter on its token_prob gate, against HF generate:
# `hamburger bench` once on the shipped model (prefilter 0) and once on a copy exported with --prefilter Q, each run
# with hf_generate in the same process (the speedup is read against the HF run beside it). 4 prompts in each of the
# 4 categories, 128 new tokens, 2 repetitions, batch 1, fp32, 2 threads, MKL_CBWR=AVX2, nothing else running.
#   bash benchmarks/results/prefilter/run_speed.sh Q
set -euo pipefail
cd "$(dirname "$0")/../../.."
Q=${1:?usage: run_speed.sh PREFILTER}
R=benchmarks/results/prefilter
HB=${HB:-.venv/bin/hamburger}
export MKL_CBWR=AVX2
M=runs/cpu/v2-prefilter-$Q
[ -f $M/hamburger_config.json ] || $HB export --model hamburger/default_model --out $M --dtype bfloat16 --prefilter "$Q"
bench() {  # MODEL OUT
    $HB bench --model "$1" --out "$2" --methods hamburger,hf_generate --confidences 0.9,0.8 --n-prompts 4 \
        --max-new-tokens 128 --repeats 2 --lengths '' --batch-sizes '' --threads 2
}
bench hamburger/default_model $R/bench-prefilter-0
bench $M $R/bench-prefilter-$Q
