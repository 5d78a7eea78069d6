#!/usr/bin/env bash
# Issue 19: does drafting from the n-gram table move verify_fold's answers? The fold is not lossless and folds at
# forward boundaries, so other drafts mean other boundaries and possibly other tokens (lossless verify cannot move:
# engine_ab.py's answers were identical). verify_fold's default fold, 256 new tokens, drafting as `generate` does,
# with the table (`--verify-ngrams` default) and without (`--verify-ngrams 0`), on the dev prompts session 33 judged
# that fold on: greedy GSM8K rows 0-59 and 20 chat prompts, sampled GSM8K rows 0-59 (T 0.7, top-p 0.9, seed = the
# prompt's position); the base's and base-sampled answers reused from the runs that decoded them (MKL_CBWR=AVX2, as
# there). A step is skipped when its output exists. The runs were made at 67c193e..adf0347, when sampled rows still
# drafted from the table; since the greedy-only rule a sampled run with the table decodes as the one without.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-draft-pricing
export MKL_CBWR=AVX2
FOLD=segments:60:0.45:first:steps=8:p=0.7
MATH=experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60
CHAT=experiments/2026-11-26-long-answers/eval-dev-default-segments-32-c0.3-p10-t256-chat
decode() {  # OUT NGRAMS SAMPLE TASK-ARGS...
    local out=$E/eval-$1 ngrams=$2 sample=$3
    shift 3
    [ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval ${sample:+--sample $sample} --verify-fold $FOLD \
        --verify-confidence 0.3 --verify-lookup 10 ${ngrams:+--verify-ngrams $ngrams} --confidence "" --batch-size 8 \
        --threads 2 --max-new-tokens 256 "$@" --out $out > $out.txt 2>&1
}
for arm in none table; do
    ngrams=$([ $arm = none ] && echo 0 || echo "")
    decode greedy-gsm8k60-$arm "$ngrams" "" --tasks gsm8k --limit 60 --reuse-base $MATH
    decode greedy-chat20-$arm "$ngrams" "" --tasks chat --limit 20 --reuse-base $CHAT
    decode sampled-gsm8k60-$arm "$ngrams" only --tasks gsm8k --limit 60 --reuse-base $MATH
done
