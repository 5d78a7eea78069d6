#!/usr/bin/env bash
# compare.sh RUN_EXPORT OUT_DIR: a model a lent GPU brought back against the shipped default model, on this CPU, in
# the shipped decoding settings, with one command (~15 min on 2 cores; stop CPU training first if the seconds matter):
#   1. export it as the shipped config decodes (token_prob gate, prefilter 0.75 tied to the knob, default knob 1.0);
#   2. both models' decode curves on the 48 dev prompts (benchmarks/decode_fidelity.py: by_kind and
#      after_merge_by_size say whether the skip path moved), paired per prompt with the shipped model first;
#   3. the candidate against the shipped curve at equal tau (benchmarks/equal_tau.py);
#   4. the knob rule on the candidate (hamburger calibrate, dev chat + GSM8K prompts, 20 each, as the shipped one).
# The teacher-forced numbers come from the run's own metrics.jsonl (its val rows are the shipped model's, see
# experiments/2026-11-24-gpu-lora-merged/README.md). Every step is skipped when its output exists: rerun to resume.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:?usage: compare.sh RUN_EXPORT OUT_DIR}
OUT=${2:?usage: compare.sh RUN_EXPORT OUT_DIR}
HB=${HB:-.venv/bin/hamburger}
PY=${PY:-.venv/bin/python}
SHIPPED=hamburger/default_model
C=$OUT/candidate
export MKL_CBWR=AVX2
mkdir -p "$OUT"
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp export
[ -f $C/hamburger_config.json ] || $HB export --model "$RUN" --out $C --dtype bfloat16 --gate token_prob \
    --prefilter 0.75 --default-confidence 1.0
stamp decode curves
[ -s $OUT/decode_fidelity.json ] || $PY benchmarks/decode_fidelity.py --models $SHIPPED $C \
    --confidence 0.95,0.9,0.7,0.5 --prefilters 0.75 --threads 2 --out $OUT/decode_fidelity.json \
    2>&1 | grep -v Loading | tee $OUT/decode_fidelity.log
$PY benchmarks/equal_tau.py $OUT/decode_fidelity.json:$SHIPPED $OUT/decode_fidelity.json:$C --anchor-base \
    | tee $OUT/equal_tau.txt
stamp calibrate
[ -s $OUT/calibrate.txt ] || $HB calibrate --model $C --confidence 0.8,0.85,0.9,0.95,1.0 --limit 20 \
    --max-new-tokens 96 --batch-size 8 --threads 2 --out $OUT/calibration | tee $OUT/calibrate.txt
stamp done
