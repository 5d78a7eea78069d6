#!/usr/bin/env bash
# Issue 19, session 29: the default verify_fold (and lossless verify, the control) decoding *sampled* (temperature 0.7,
# top-p 0.9, seed = the prompt's position: base-sampled's settings), held to the base's sampled answers on the dev
# prompts by `hamburger eval --sample only` (the rule and the reading are in README.md, fixed before these runs).
# Every step is skipped when its output exists (rerun to continue); run on a quiet machine. The base's and
# base-sampled answers are reused from the earlier runs named below (same prompts, seeds and lengths):
#   1. the first 120 chat + 120 GSM8K dev prompts, 96 new tokens (experiments/2026-11-26-fold-keep/, window 56's run);
#   2. 60 GSM8K dev prompts, 256 new tokens (experiments/2026-11-26-long-math-60/);
#   3. 20 chat dev prompts, 256 new tokens (experiments/2026-11-26-long-answers/);
#   5. (CURVE=1, after steps 1-3 showed verify_fold sampled outside the bands on step 2) step 2 at longer windows of the
#      same folding, 96 and 128, verify_fold sampled alone: a curve, it chooses nothing;
#   4. test, reported only (TEST=1): all 541 IFEval prompts, 128 new tokens, verify_fold sampled alone (no control, for
#      time); base-sampled decoded here (no earlier run sampled the base on IFEval), the base's greedy answers reused
#      from experiments/2026-11-26-long-answers/.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-sampled-fold
FOLD=segments:60:first:steps=8:p=0.7  # DEFAULT_FOLD when this ran (sessions 28-32)
export MKL_CBWR=AVX2
fold_only=(--sample only --verify-fold "$FOLD" --verify-confidence 0.3 --verify-lookup 10 --confidence ""
           --batch-size 8 --threads 2)
common=(--verify "${fold_only[@]}")  # verify_fold and the control
step() {  # NAME TASKS LIMIT TOKENS [REUSE]
    [ -s $E/eval-$1/summary.json ] || .venv/bin/hamburger eval "${common[@]}" --tasks $2 --limit $3 \
        --max-new-tokens $4 ${5:+--reuse-base $5} --out $E/eval-$1 > $E/eval-$1.txt 2>&1
}
step dev-t96-l120 chat,gsm8k 120 96 \
    "experiments/2026-11-26-fold-keep/eval-dev-default-segments-56-first-steps=8-p=0.7-c0.3-p10-l120"
step dev-t256-gsm8k-l60 gsm8k 60 256 \
    experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60
step dev-t256-chat-l20 chat 20 256 experiments/2026-11-26-long-answers/eval-dev-default-segments-32-c0.3-p10-t256-chat
for window in ${CURVE:+96 128}; do
    fold=segments:$window:first:steps=8:p=0.7
    [ -s $E/eval-dev-t256-gsm8k-l60-w$window/summary.json ] || .venv/bin/hamburger eval --sample only \
        --verify-fold $fold --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 \
        --tasks gsm8k --limit 60 --max-new-tokens 256 \
        --reuse-base experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60 \
        --out $E/eval-dev-t256-gsm8k-l60-w$window > $E/eval-dev-t256-gsm8k-l60-w$window.txt 2>&1
done
common=("${fold_only[@]}")
[ -z "${TEST:-}" ] || step ifeval-n541 ifeval 541 128 \
    experiments/2026-11-26-long-answers/eval-ifeval-default-segments-32-c0.3-p10-n541
