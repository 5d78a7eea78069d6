#!/usr/bin/env bash
# The stop-head prefilter of the token_prob gate on the shipped model v2: the decode curve (tau and what the unchanged
# base thinks of the answers) at knobs 0.8 / 0.9 for prefilters 0 (none), 0.3 and 0.5, on the 48 dev prompts of every
# decode_fidelity run (chat, math, code; never trained on), paired with the plain decode at the same knob.
# 2-core CPU, 2 threads, fp32, nothing else running (the background training paused with SIGSTOP).
set -euo pipefail
cd "$(dirname "$0")/../../.."
.venv/bin/python benchmarks/decode_fidelity.py --models hamburger/default_model --confidence 0.8,0.9 \
    --prefilters 0,0.3,0.5 --per-category 16 --threads "${THREADS:-2}" \
    --out benchmarks/results/prefilter/decode_fidelity.json
