#!/usr/bin/env bash
# Tied prefilter 1.0 (the stop head must give the group the knob itself) on the same 48 dev prompts as
# run_quality.sh, at knobs 0.9 / 0.8 / 0.7, read at equal tau against the plain curve of decode_fidelity.json.
# One thread beside the niced CPU training (tokens do not depend on the thread count's timing).
set -euo pipefail
cd "$(dirname "$0")/../../.."
export MKL_CBWR=AVX2
R=benchmarks/results/prefilter-knob
.venv/bin/python benchmarks/decode_fidelity.py --models hamburger/default_model --confidence 0.7,0.8,0.9 \
    --prefilters 1.0 --per-category 16 --threads 1 --out $R/decode_fidelity_prefilter_one.json
.venv/bin/python benchmarks/equal_tau.py $R/decode_fidelity.json:hamburger/default_model \
    $R/decode_fidelity_prefilter_one.json:hamburger/default_model --prefilter-a 0 --prefilter-b 1.0 --anchor-base \
    > $R/equal_tau_prefilter_one.txt
