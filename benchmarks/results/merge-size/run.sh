#!/usr/bin/env bash
# The skip path by the size of the merged slot it reads, on the shipped model's real decodes (48 dev prompts,
# 96 tokens, greedy, its token_prob gate and prefilter 0.75) at four knobs: decode_fidelity's after_merge_by_size.
set -euo pipefail
cd "$(dirname "$0")/../../.."
HERE=benchmarks/results/merge-size
.venv/bin/python benchmarks/decode_fidelity.py --models hamburger/default_model --confidence 0.5,0.7,0.8,0.9 \
    --prefilters 0.75 --out $HERE/decode_fidelity.json 2>&1 | tee $HERE/decode_fidelity.log
