#!/usr/bin/env bash
# Issue 19, session 27: verify-fold keeping one token's own slot per folded group instead of a merged slot
# (`Folding.keep`), decoded on the dev prompts and timed; the rule fixed before these runs is in README.md. Every step
# is skipped when its output exists (rerun to continue). Run on a quiet machine (pause CPU training first).
#   1. 60 GSM8K dev prompts, 256 new tokens (the base's answers reused from experiments/2026-11-26-long-math-60/);
#   2. the knob rule's dev prompts (20 chat + 20 GSM8K, 96 new tokens; base answers from
#      experiments/2026-11-26-verify-speed/);
#   2b. with POOLED=1 (session 28): step 2 on the first 120 chat + 120 GSM8K dev prompts (-l120); the base's answers
#      come from the first such run (window 56's) and are reused by the others;
#   3. 20 chat dev prompts, 256 new tokens (base answers from experiments/2026-11-26-long-answers/);
#   4. speed and KV, 8 chat + 8 GSM8K dev prompts at 128 and 256 new tokens (experiments/2026-11-26-long-answers/speed.sh);
#   5. test, reported only (TEST=1): all 541 IFEval prompts, 128 new tokens, paired with the base's answers of
#      experiments/2026-11-26-long-answers/ (the base's greedy answers only: IFEval's bands need no sampled ones).
# FOLD: the folding (default: the candidate below). MODEL=default: the shipped model.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-fold-keep
FOLD=${FOLD:-segments:64:first:steps=8:p=0.7}
export OUT_DIR=$E MODEL=default FOLD THREADS=2 IFEVAL=
TOKENS=256 TASKS=gsm8k LIMIT=60 REUSE=experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60 \
    bash experiments/2026-11-26-verify-speed/eval.sh
REUSE=experiments/2026-11-26-verify-speed/eval-dev-default-segments-32-c0.3-p10 bash experiments/2026-11-26-verify-speed/eval.sh
TOKENS=256 TASKS=chat REUSE=experiments/2026-11-26-long-answers/eval-dev-default-segments-32-c0.3-p10-t256-chat \
    bash experiments/2026-11-26-verify-speed/eval.sh
POOL=$E/eval-dev-default-segments-56-first-steps=8-p=0.7-c0.3-p10-l120
if [ -n "${POOLED:-}" ]; then
    reuse=
    [ ! -s $POOL/summary.json ] || reuse=$POOL
    LIMIT=120 REUSE=$reuse bash experiments/2026-11-26-verify-speed/eval.sh
fi
TOKENS=128 bash experiments/2026-11-26-long-answers/speed.sh
TOKENS=256 bash experiments/2026-11-26-long-answers/speed.sh
NAME=${FOLD//:/-}
[ -z "${TEST:-}" ] || [ -s $E/eval-ifeval-default-$NAME-n541/summary.json ] || MKL_CBWR=AVX2 .venv/bin/hamburger eval \
    --verify-fold $FOLD --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 \
    --tasks ifeval --limit 541 --max-new-tokens 128 --no-base-sampled \
    --reuse-base experiments/2026-11-26-long-answers/eval-ifeval-default-segments-32-c0.3-p10-n541 \
    --out $E/eval-ifeval-default-$NAME-n541 > $E/eval-ifeval-default-$NAME-n541.txt 2>&1
