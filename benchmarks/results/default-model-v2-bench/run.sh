#!/usr/bin/env bash
# Speed of the default model v2 in hamburger mode against HF generate and HF prompt lookup, in one process
# (`hamburger bench`): 4 prompts in each of the 4 categories, 128 new tokens, 2 repetitions, batch 1, fp32,
# 2 threads, MKL_CBWR=AVX2, a quiet 2-core CPU. Knobs 1.0 (the default), 0.9 and 0.8. Resumes if killed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export MKL_CBWR=AVX2
${HB:-.venv/bin/hamburger} bench --out benchmarks/results/default-model-v2-bench --methods hamburger,hf_generate,prompt_lookup \
    --confidences 1.0,0.9,0.8 --n-prompts 4 --max-new-tokens 128 --repeats 2 --lengths '' --batch-sizes '' --threads 2
