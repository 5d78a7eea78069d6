#!/usr/bin/env bash
# Issue 19: the quality suite on verify mode with folding (FOLD, default segments:32) drafting by prompt lookup (up to
# LOOKUP tokens, default 10) and by the MSD at stop-head confidence CONF (default 0.3), the GPU warm start (MODEL=default:
# the shipped default model, outputs named default-...; MODEL=FOLDER: that checkpoint, FOLDER's name first), paired
# with the base by `hamburger eval`'s bands (the protocol of experiments/2026-11-25-verify-fold/eval.sh):
#   dev: the knob rule's prompts (20 chat + 20 GSM8K dev prompts, 96 new tokens);
#   test (report only, nothing chosen on it; only with IFEVAL=1): the first 60 IFEval prompts, 128 new tokens.
# Outputs: eval-dev-NAME/, eval-ifeval-NAME/ and their .txt logs (NAME: GROUPS-WINDOW-cCONF-pLOOKUP). Steps are
# skipped when their output exists. One thread each (THREADS to change). OUT_DIR puts them elsewhere (default: here).
# Longer dev answers: TOKENS=256 (default 96), TASKS=chat (default chat,gsm8k); the dev output's name then gets
# -tTOKENS and -TASKS. More IFEval prompts: IFEVAL_LIMIT=541 (default 60; the IFEval output's name gets -nLIMIT);
# NO_SAMPLED=1 leaves out the base's sampled answers there (the reference of the NLL bands only). REUSE=DIR takes the
# dev run's base and base-sampled answers from the earlier eval in DIR (`hamburger eval --reuse-base`). LIMIT=60: dev
# prompts per task (default 20; the dev output's name gets -lLIMIT).
set -euo pipefail
cd "$(dirname "$0")/../.."
E=${OUT_DIR:-experiments/2026-11-26-verify-speed}
mkdir -p "$E"
FOLD=${FOLD:-segments:32} CONF=${CONF:-0.3} LOOKUP=${LOOKUP:-10}
NAME=${FOLD//:/-}-c$CONF-p$LOOKUP
model=(--model experiments/2026-11-25-gpu-v2-two-sets/warm_start)
case ${MODEL:-} in
    "") ;;
    default) model=(); NAME=default-$NAME ;;
    *) model=(--model "$MODEL"); NAME=$(basename "$MODEL")-$NAME ;;
esac
TOKENS=${TOKENS:-96} TASKS=${TASKS:-chat,gsm8k} IFEVAL_LIMIT=${IFEVAL_LIMIT:-60} LIMIT=${LIMIT:-20}
DNAME=$NAME INAME=$NAME
[ "$TOKENS" = 96 ] || DNAME=$DNAME-t$TOKENS
[ "$TASKS" = chat,gsm8k ] || DNAME=$DNAME-${TASKS//,/-}
[ "$LIMIT" = 20 ] || DNAME=$DNAME-l$LIMIT
[ "$IFEVAL_LIMIT" = 60 ] || INAME=$NAME-n$IFEVAL_LIMIT
export MKL_CBWR=AVX2
common=("${model[@]}" --verify-fold $FOLD --verify-confidence $CONF --verify-lookup $LOOKUP --confidence ""
        --batch-size 8 --threads ${THREADS:-1})
[ -s $E/eval-dev-$DNAME/summary.json ] || .venv/bin/hamburger eval "${common[@]}" --tasks $TASKS --limit $LIMIT \
    --max-new-tokens $TOKENS ${REUSE:+--reuse-base $REUSE} --out $E/eval-dev-$DNAME > $E/eval-dev-$DNAME.txt 2>&1
[ -z "${IFEVAL:-}" ] || [ -s $E/eval-ifeval-$INAME/summary.json ] || .venv/bin/hamburger eval "${common[@]}" \
    --tasks ifeval --limit $IFEVAL_LIMIT --max-new-tokens 128 ${NO_SAMPLED:+--no-base-sampled} \
    --out $E/eval-ifeval-$INAME > $E/eval-ifeval-$INAME.txt 2>&1
