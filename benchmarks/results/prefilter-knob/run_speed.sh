#!/usr/bin/env bash
# Speed of the shipped model v2 with and without the knob-tied stop-head prefilter, against HF generate:
# `hamburger bench` once on the model with prefilter 0 and once on a copy exported with --prefilter Q, each run with
# hf_generate in the same process (the speedup is read against the HF run beside it). Knobs 0.95-0.7, 4 prompts
# in each of the 4 categories, 128 new tokens, 2 repetitions, batch 1, fp32, 2 threads, MKL_CBWR=AVX2, nothing else
# running (background jobs paused with SIGSTOP).
#   bash benchmarks/results/prefilter-knob/run_speed.sh Q
set -euo pipefail
cd "$(dirname "$0")/../../.."
Q=${1:?usage: run_speed.sh PREFILTER}
R=benchmarks/results/prefilter-knob
HB=${HB:-.venv/bin/hamburger}
export MKL_CBWR=AVX2
copy() {  # PREFILTER: the shipped weights exported with that prefilter
    local m=runs/cpu/v2-prefilter-knob-$1
    [ -f $m/hamburger_config.json ] || $HB export --model hamburger/default_model --out $m --dtype bfloat16 \
        --prefilter "$1" >&2
    echo $m
}
bench() {  # MODEL OUT
    $HB bench --model "$1" --out "$2" --methods hamburger,hf_generate --confidences 0.95,0.9,0.8,0.7 --n-prompts 4 \
        --max-new-tokens 128 --repeats 2 --lengths '' --batch-sizes '' --threads 2
}
bench "$(copy 0)" $R/bench-prefilter-0
bench "$(copy "$Q")" $R/bench-prefilter-$Q
