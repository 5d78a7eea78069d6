#!/usr/bin/env bash
# Issue 19, session 33: verify_fold's training-free default with a window that grows with the answer
# (`segments:60:SHARE:first:steps=8:p=0.7`), sampled on long math, paired with the default (README.md: the rule, fixed
# before these runs). SHARE <= 0.45 keeps the window at 60 up to 133 answer tokens, so every result at <= 128 tokens
# (96-token dev bands, KV and speed at 128, IFEval at 128) is the default's by construction. Every run: sampled
# (T 0.7, top-p 0.9, seed = the prompt's position), drafting as `generate` does, 256 new tokens, the base's and
# base-sampled answers reused where an earlier run decoded them. A step is skipped when its output exists.
#   STAGE=1: dev GSM8K rows 0-59 and 60-119, arms default, s45 (share 0.45), s35 (share 0.35);
#   STAGE=2 ARM=NAME: dev rows 120-239 (base and base-sampled decoded here), arms default and NAME;
#   STAGE=3 ARM=NAME: greedy NAME on rows 0-59 at 256 tokens and on 20 chat dev prompts at 256 tokens.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-growing-first
export MKL_CBWR=AVX2
# default: DEFAULT_FOLD when these ran (session 28's; since this session's result DEFAULT_FOLD is s45's)
declare -A FOLDS=([default]=segments:60:first:steps=8:p=0.7 [s45]=segments:60:0.45:first:steps=8:p=0.7
                  [s35]=segments:60:0.35:first:steps=8:p=0.7)
FIRST=experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60
MORE=experiments/2026-11-27-gpu-fold-reverse
[ -s $E/gsm8k_dev_120_240.jsonl ] || .venv/bin/python -c "
import json
from hamburger.data.prompts import build_prompts
rows = build_prompts(['gsm8k'], 'dev', seed=0)[120:240]
print('\n'.join(json.dumps({'id': r['id'], 'question': r['prompt'], 'answer': r['answer']}) for r in rows))
" > $E/gsm8k_dev_120_240.jsonl
decode() {  # OUT ARM SAMPLE TASK-ARGS...
    local out=$E/eval-$1 fold=${FOLDS[$2]} sample=$3
    shift 3
    [ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval ${sample:+--sample $sample} --verify-fold $fold \
        --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 \
        "$@" --out $out > $out.txt 2>&1
}
case ${STAGE:-1} in
1) for arm in default s45 s35; do
       decode rows0-60-$arm $arm only --tasks gsm8k --limit 60 --reuse-base $FIRST
       decode rows60-120-$arm $arm only --tasks gsm8k --limit 60 --gsm8k-file $MORE/gsm8k_dev_60_120.jsonl \
           --reuse-base $MORE/eval-t256-gsm8k-more-default
   done ;;
2) decode rows120-240-default default only --tasks gsm8k --limit 120 --gsm8k-file $E/gsm8k_dev_120_240.jsonl
   decode rows120-240-$ARM $ARM only --tasks gsm8k --limit 120 --gsm8k-file $E/gsm8k_dev_120_240.jsonl \
       --reuse-base $E/eval-rows120-240-default ;;
3) decode greedy-rows0-60-$ARM $ARM "" --tasks gsm8k --limit 60 --reuse-base $FIRST
   decode greedy-chat20-$ARM $ARM "" --tasks chat --limit 20 \
       --reuse-base experiments/2026-11-26-long-answers/eval-dev-default-segments-32-c0.3-p10-t256-chat ;;
esac
