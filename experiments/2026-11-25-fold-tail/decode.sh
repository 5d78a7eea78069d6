#!/usr/bin/env bash
# Issue 19, no training: the GPU warm start (trained with one slot per group) read in three layouts, on the 48 dev
# prompts of benchmarks/decode_fidelity.py (96 tokens, greedy, token_prob gate, prefilter 0.75, one thread): the
# paper's (0), the single tail (1) and the folding single tail (1f; 1f2 and 1f3 fold 2 and 3 groups later); equal-tau
# tables; then the knob rule (hamburger calibrate, as recipes/lent-gpu/compare.sh runs it) on the folding exports.
# Steps are skipped when their output exists (this session ran them one by one, with runs/fold-candidate and
# runs/fold2-candidate as the export folders).
set -euo pipefail
cd "$(dirname "$0")"
main() {
    local HB=${HB:-../../.venv/bin/hamburger} PY=${PY:-../../.venv/bin/python} W=../2026-11-25-gpu-v2-two-sets/warm_start
    local C=../../runs/fold-candidate  # (+ the fold delay)
    export MKL_CBWR=AVX2
    [ -s decode_fidelity.json ] || $PY ../../benchmarks/decode_fidelity.py --models $W --gates token_prob \
        --prefilters 0.75 --single-tails 0,1,1f --confidence 0.9,0.7,0.5 --threads 1 --out decode_fidelity.json \
        > decode_fidelity.log 2>&1
    # folding 2 and 3 groups later (fold_tail 2, 3), with the paper's layout again as the paired reference
    [ -s decode_fidelity_delay.json ] || $PY ../../benchmarks/decode_fidelity.py --models $W --gates token_prob \
        --prefilters 0.75 --single-tails 0,1f2,1f3 --confidence 0.9,0.7,0.5 --threads 1 \
        --out decode_fidelity_delay.json > decode_fidelity_delay.log 2>&1
    { for pair in "0 1f" "0 1" "1 1f"; do set -- $pair
        $PY ../../benchmarks/equal_tau.py decode_fidelity.json:$W decode_fidelity.json:$W --layout-a $1 --layout-b $2 \
            --anchor-base; done
      for pair in "0 1f2" "0 1f3"; do set -- $pair
        $PY ../../benchmarks/equal_tau.py decode_fidelity_delay.json:$W decode_fidelity_delay.json:$W --layout-a $1 \
            --layout-b $2 --anchor-base; done
      for b in 1f2 1f3; do
        $PY ../../benchmarks/equal_tau.py decode_fidelity.json:$W decode_fidelity_delay.json:$W --layout-a 1 \
            --layout-b $b --anchor-base; done; } > equal_tau.txt
    # the knob rule on the folding exports (d 1 and 2)
    for d in 1 2; do
        local out=calibration$([ $d = 1 ] || echo -fold$d) txt=calibrate$([ $d = 1 ] || echo -fold$d).txt
        [ -f $C$d/hamburger_config.json ] || $HB export --model $W --out $C$d --dtype bfloat16 --gate token_prob \
            --prefilter 0.75 --default-confidence 1.0 --single-tail 1 --fold-tail $d
        [ -s $txt ] || $HB calibrate --model $C$d --confidence 0.8,0.85,0.9,0.95,1.0 --limit 20 \
            --max-new-tokens 96 --batch-size 8 --threads 2 --out $out > $txt
    done
}
main "$@"
