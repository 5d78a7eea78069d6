#!/usr/bin/env bash
# Where the wrong tokens sit: the answers' NLL under the unchanged base split by who wrote each token (single slot,
# the skip path after a merged slot, the micro-step decoder; decode_fidelity's by_kind), for the shipped model at
# knobs 0.9 and 0.7 with prefilter 0 and 0.75, on the same 48 dev prompts as run_quality.sh (whose numbers these
# decodes repeat). 2-core CPU, 2 threads, fp32, greedy, 96 new tokens.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export MKL_CBWR=AVX2
.venv/bin/python benchmarks/decode_fidelity.py --models hamburger/default_model --confidence 0.7,0.9 \
    --prefilters 0,0.75 --per-category 16 --threads "${THREADS:-2}" \
    --out benchmarks/results/prefilter-knob/decode_fidelity_kinds.json
