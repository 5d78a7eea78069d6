#!/usr/bin/env bash
# Session 42: the rest of the quality suite for the fold reader (the shipped model with the warm start at
# `lora_scope: after_fold` as its reader, runs/keep-fold/dm-reader, built by reader_speed.sh NAME=reader), verify_fold
# at the default fold, the CLI's drafting (stop head 0.3, lookup 10), batch 8, 2 threads. The base's (and the base's
# sampled) answers are reused from the runs named below, so each step pairs with the shipped model's run there (at
# <= 135 answer tokens the default fold is session 28's fixed 60-token window, token for token). The rule is in
# README.md (session 42), fixed before these runs. A step is skipped when its output exists (rerun to continue).
#   STEP=1: greedy, the first 120 chat + 120 GSM8K dev prompts, 96 tokens (../2026-11-26-fold-keep/, window 60's -l120);
#   STEP=2: sampled (T 0.7, top-p 0.9, base-sampled's seeds), the same prompts and tokens (../2026-11-26-sampled-fold/);
#   STEP=3: sampled, 20 chat dev prompts, 256 tokens, the reader and the shipped model (no reader) as its control;
#   STEP=4: test, reported only: all 541 IFEval prompts, 128 tokens, greedy (the shipped model's: ../2026-11-26-fold-keep/);
#   STEP=5 (added after step 1's result, a control that decides nothing): step 1 with the shipped model (no reader) on
#   today's code and machine, since step 1's shipped run is session 28's (AMD EPYC, older drafting);
#   STEP=6 (added after step 2's result, decides nothing): step 2 with the shipped model on today's code, since step
#   2's shipped run is session 29's, whose code drew its random stream differently (independent draws, not pairs).
#   STEP=7 (session 43, its rule in README.md): step 1 on the next 240 dev prompts (chat and GSM8K rows 120-239), the
#   base's greedy and sampled answers and the shipped model decoded here, then the reader reusing those base answers.
# Another reader (a checkpoint trained at `lora_scope: after_fold`, e.g. the lent-GPU job's export): READER=DIR
# NAME=TAG, its outputs eval-*-TAG, the shipped model with it at runs/keep-fold/dm-TAG (default: af-warm, TAG reader).
# Since session 43 the shipped model ("" below) reads sampled rows' folds with af-warm (`--fold-reader-sampled-only`):
# its greedy runs are still the base's reading, but a new sampled control of that reading needs the model without it
# (runs/keep-fold/dm-noreader, built by reader_speed.sh NAME=noreader).
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-keep-fold-full
R=runs/keep-fold
NAME=${NAME:-reader}
READER=${READER:-$R/warm-after-export}
export MKL_CBWR=AVX2
[ -f $READER/hamburger_config.json ] || [ $NAME != reader ] || .venv/bin/python $E/rebuild.py $READER after_fold
[ -f $R/dm-$NAME/fold_reader.safetensors ] || .venv/bin/hamburger export --model hamburger/default_model \
    --out $R/dm-$NAME --fold-reader $READER
decode() {  # OUT MODEL TASK-ARGS...
    local out=$E/eval-$1 model=$2
    shift 2
    [ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval ${model:+--model $model} \
        --verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10 --confidence "" \
        --batch-size 8 --threads 2 "$@" --out $out > $out.txt 2>&1
}
case ${STEP:-1} in
1) decode t96-l120-$NAME $R/dm-$NAME --tasks chat,gsm8k --limit 120 --max-new-tokens 96 \
       --reuse-base "experiments/2026-11-26-fold-keep/eval-dev-default-segments-56-first-steps=8-p=0.7-c0.3-p10-l120" ;;
2) decode sampled-t96-l120-$NAME $R/dm-$NAME --sample only --tasks chat,gsm8k --limit 120 --max-new-tokens 96 \
       --reuse-base experiments/2026-11-26-sampled-fold/eval-dev-t96-l120 ;;
3) for arm in $NAME s45; do
       model=$R/dm-$NAME
       [ $arm = $NAME ] || model=
       decode sampled-chat20-$arm "$model" --sample only --tasks chat --limit 20 --max-new-tokens 256 \
           --reuse-base experiments/2026-11-26-sampled-fold/eval-dev-t256-chat-l20
   done ;;
5) decode t96-l120-s45 "" --tasks chat,gsm8k --limit 120 --max-new-tokens 96 \
       --reuse-base "experiments/2026-11-26-fold-keep/eval-dev-default-segments-56-first-steps=8-p=0.7-c0.3-p10-l120" ;;
6) decode sampled-t96-l120-s45 "" --sample only --tasks chat,gsm8k --limit 120 --max-new-tokens 96 \
       --reuse-base experiments/2026-11-26-sampled-fold/eval-dev-t96-l120 ;;
7) F=$E/chat_dev_120_240.jsonl
   [ -s $F ] || .venv/bin/python -c "
import json
from hamburger.bench.prompts import category_prompts
print('\\n'.join(json.dumps({'id': r['id'], 'prompt': r['prompt']}) for r in category_prompts('chat', 240, seed=1)[120:]))
" > $F
   rows=(--tasks chat,gsm8k --limit 120 --max-new-tokens 96 --chat-file $F
         --gsm8k-file experiments/2026-11-27-growing-first/gsm8k_dev_120_240.jsonl)
   decode t96-rows120-240-s45 "" "${rows[@]}"
   decode t96-rows120-240-$NAME $R/dm-$NAME "${rows[@]}" --reuse-base $E/eval-t96-rows120-240-s45 ;;
4) decode ifeval-n541-$NAME $R/dm-$NAME --tasks ifeval --limit 541 --max-new-tokens 128 --no-base-sampled \
       --reuse-base experiments/2026-11-26-long-answers/eval-ifeval-default-segments-32-c0.3-p10-n541 ;;
esac
