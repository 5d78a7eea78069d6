#!/usr/bin/env bash
# The committed quality and speed runs of the shipped default model (README, model card).
# About 35 minutes on a 2-core CPU. Raw results: benchmarks/results/default-model-{eval,bench}/.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
THREADS=${THREADS:-2}
hamburger eval --tasks chat,humaneval,gsm8k --limit 24 --max-new-tokens 128 --confidence 0.5,0.7,0.9 \
    --batch-size 4 --threads "$THREADS" --out benchmarks/results/default-model-eval
hamburger bench --n-prompts 6 --repeats 1 --max-new-tokens 128 --confidences 0.6,0.9 \
    --methods hamburger,own_loop,hf_generate,prompt_lookup --lengths 64,256,1024 --batch-sizes 1,4,16 \
    --threads "$THREADS" --out benchmarks/results/default-model-bench
# The length and batch sweeps (EOS ignored: every row makes 128 tokens) at a knob that merges and at the
# default knob (which hardly does): KV and forwards vs length, throughput vs batch size.
hamburger bench --categories chat --n-prompts 4 --repeats 1 --max-new-tokens 128 --methods hf_generate \
    --lengths 64,256,1024 --batch-sizes 1,4,16 --sweep-confidence 0.6 \
    --threads "$THREADS" --out benchmarks/results/default-model-sweeps-0.6
hamburger bench --categories chat --n-prompts 4 --repeats 1 --max-new-tokens 128 --methods hf_generate \
    --lengths '' --batch-sizes 1,4,16 --threads "$THREADS" --out benchmarks/results/default-model-sweeps-0.9
