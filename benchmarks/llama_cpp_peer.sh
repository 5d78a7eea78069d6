#!/usr/bin/env bash
# The default model's modes beside the peer a CPU user runs the same base with: llama.cpp on the bundled GGUF (the
# base's own Q4_1 weights, which hamburger reads dequantized), in one bench run with HF `generate` and prompt lookup,
# greedy, batch 1, every category, at the HF side's fp32 and, on a CPU with bf16 instructions, bf16.
# Needs llama-cpp-python (bash benchmarks/install_llama_cpp.sh) and an otherwise idle machine: llama.cpp's threads
# wait for each other spinning, so a busy core (even a niced job) slows it many times over.
# Then llama.cpp with llama-cpp-python's prompt lookup (llama_cpp_lookup) beside it and HF's, fp32.
# Raw results: benchmarks/results/llama-cpp-peer/{float32,bfloat16,lookup}/ (about 35 minutes on a 2-core CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
THREADS=${THREADS:-2}
DTYPES=${DTYPES:-float32 $(grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && echo bfloat16 || true)}
for dtype in $DTYPES; do
    .venv/bin/hamburger bench --methods hf_generate,prompt_lookup,verify,verify_fold,llama_cpp --n-prompts 3 \
        --repeats 3 --max-new-tokens 128 --lengths "" --batch-sizes "" --dtype "$dtype" --threads "$THREADS" \
        --out "benchmarks/results/llama-cpp-peer/$dtype"
done
.venv/bin/hamburger bench --methods hf_generate,prompt_lookup,llama_cpp,llama_cpp_lookup --n-prompts 3 --repeats 3 \
    --max-new-tokens 128 --lengths "" --batch-sizes "" --threads "$THREADS" --out benchmarks/results/llama-cpp-peer/lookup
