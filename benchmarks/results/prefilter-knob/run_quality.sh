#!/usr/bin/env bash
# The stop-head prefilter tied to the knob (the MSD is asked only while the stop head's 1 - p_stop >= prefilter x
# knob) on the shipped model v2: the decode curve at knobs 0.5-0.9 for prefilters 0 (none), 0.5 and 0.75, on the 48
# dev prompts of every decode_fidelity run (chat, math, code; never trained on), each paired with the plain decode at
# the same knob. 2-core CPU, 2 threads, fp32, greedy, 96 new tokens.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export MKL_CBWR=AVX2
.venv/bin/python benchmarks/decode_fidelity.py --models hamburger/default_model --confidence 0.5,0.6,0.7,0.8,0.9 \
    --prefilters 0,0.5,0.75 --per-category 16 --threads "${THREADS:-2}" \
    --out benchmarks/results/prefilter-knob/decode_fidelity.json
R=benchmarks/results/prefilter-knob
.venv/bin/python benchmarks/decode_fidelity.py --paired $R/decode_fidelity.json > $R/decode_fidelity_paired.txt
for q in 0.5 0.75; do  # each prefilter against the plain curve at equal tau, both through the base at tau 1
    .venv/bin/python benchmarks/equal_tau.py $R/decode_fidelity.json:hamburger/default_model \
        $R/decode_fidelity.json:hamburger/default_model --prefilter-a 0 --prefilter-b $q --anchor-base
done > $R/equal_tau.txt
