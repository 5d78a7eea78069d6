#!/usr/bin/env bash
# Issue 19, no training: the GPU warm start (trained with one slot per group) read in three layouts, on the 48 dev
# prompts of benchmarks/decode_fidelity.py (96 tokens, greedy, token_prob gate, prefilter 0.75, one thread): the
# paper's (0), the single tail (1) and the folding single tail (1f); equal-tau tables; then the knob rule
# (hamburger calibrate, as recipes/lent-gpu/compare.sh runs it) on the folding export. Steps are skipped when their
# output exists.
set -euo pipefail
cd "$(dirname "$0")"
main() {
    local HB=${HB:-../../.venv/bin/hamburger} PY=${PY:-../../.venv/bin/python} W=../2026-11-25-gpu-v2-two-sets/warm_start
    local C=../../runs/fold-candidate
    export MKL_CBWR=AVX2
    [ -s decode_fidelity.json ] || $PY ../../benchmarks/decode_fidelity.py --models $W --gates token_prob \
        --prefilters 0.75 --single-tails 0,1,1f --confidence 0.9,0.7,0.5 --threads 1 --out decode_fidelity.json \
        > decode_fidelity.log 2>&1
    { for pair in "0 1f" "0 1" "1 1f"; do set -- $pair
        $PY ../../benchmarks/equal_tau.py decode_fidelity.json:$W decode_fidelity.json:$W --layout-a $1 --layout-b $2 \
            --anchor-base; done; } > equal_tau.txt
    [ -f $C/hamburger_config.json ] || $HB export --model $W --out $C --dtype bfloat16 --gate token_prob \
        --prefilter 0.75 --default-confidence 1.0 --single-tail 1 --fold-tail
    [ -s calibrate.txt ] || $HB calibrate --model $C --confidence 0.8,0.85,0.9,0.95,1.0 --limit 20 \
        --max-new-tokens 96 --batch-size 8 --threads 2 --out calibration > calibrate.txt
}
main "$@"
