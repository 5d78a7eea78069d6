#!/usr/bin/env bash
# What a forward over k new positions costs against one (benchmarks/forward_positions.py), on torch (fp32, bf16: HF's
# forward and the default model's own) and on llama.cpp (the bundled Q4_1 GGUF, logits of every position or of the
# last only), on caches of 200 and 800 slots. torch and llama.cpp run in separate processes: torch's OpenMP threads
# spin on after a forward and would slow llama.cpp's, whose own threads spin too, so run it on an otherwise idle
# machine. Needs llama-cpp-python (bash benchmarks/install_llama_cpp.sh). Raw results:
# benchmarks/results/forward-positions/ (about 8 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
THREADS=${THREADS:-2}
OUT=benchmarks/results/forward-positions
for cache in 200 800; do
    .venv/bin/python -m benchmarks.forward_positions --cache "$cache" \
        --backends torch-float32,torch-bfloat16,hamburger-float32,hamburger-bfloat16 \
        --threads "$THREADS" --out "$OUT/torch_cache_$cache.json"
    .venv/bin/python -m benchmarks.forward_positions --backends llama_cpp,llama_cpp_last_logits --cache "$cache" \
        --threads "$THREADS" --out "$OUT/llama_cpp_cache_$cache.json"
done
