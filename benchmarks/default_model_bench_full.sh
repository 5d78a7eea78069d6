#!/usr/bin/env bash
# The full-size benchmark of the shipped default model (README "Results"): 4 categories x 20 prompts,
# 3 repetitions, 128 new tokens, length and batch sweeps. About 1 h 45 min on a 2-core CPU (nothing else running); it resumes where
# it stopped when run again (bench_log.jsonl in the output folder).
# Early-exit self-speculation runs separately on fewer prompts: on this base (not trained for early
# exit) it decodes at about a fifth of HF generate's speed, which would add hours at full size.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
THREADS=${THREADS:-2}
hamburger bench --n-prompts 20 --repeats 3 --max-new-tokens 128 --confidences 0.6,0.9 \
    --methods hamburger,own_loop,hf_generate,prompt_lookup --lengths 64,128,256,512,1024 --batch-sizes 1,4,16 \
    --threads "$THREADS" --out benchmarks/results/default-model-bench-full "$@"
hamburger bench --n-prompts 1 --repeats 1 --max-new-tokens 128 --methods hf_generate,early_exit \
    --lengths '' --batch-sizes '' --threads "$THREADS" --out benchmarks/results/default-model-bench-early-exit
