#!/usr/bin/env bash
# Issue 19, session 47: a fold reader trained on-policy, on the default model's own sampled verify_fold answers
# (README). Steps, each skipped when its output exists (rerun to resume):
#   1. gen.py: the default model answers the first N (default 320) of session 44's 560 training prompts, sampled;
#   2. `hamburger segment` (sliding 0.9, as sr) and long_rows.py (answers of >= 100 tokens);
#   3. `hamburger train`: sr's run exactly (../2026-11-28-sampled-reader/train.sh: from the shipped reader, LoRA rank 16
#      at `lora_scope: after_fold`, lr 2e-4 constant, pure KL half reversed, batches of 8, seed 3), one pass over
#      the long rows (their count // 8 steps), held-out KL on val-long at the end;
#   4. the shipped model with those adapters as its sampled-only fold reader, decoded by
#      ../2026-11-27-draws/run.sh ROWS120=1 (arm op).
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
E=experiments/2026-11-28-on-policy
K=experiments/2026-11-27-keep-fold-full
R=runs/on-policy
N=${N:-320}
mkdir -p $R
[ "$(wc -l < $R/answers.jsonl 2>/dev/null || echo 0)" -ge $N ] || nice -n 5 .venv/bin/python $E/gen.py \
    runs/sampled-reader/prompts.jsonl $R/answers.jsonl $N 2> $R/gen.log
[ -s $R/segmented.jsonl.meta.json ] || nice -n 5 $HB segment --data $R/answers.jsonl --strategy sliding \
    --sliding-p 0.9 --out $R/segmented.jsonl --threads 2 > $R/segment.log 2>&1
[ -s $R/train-long.jsonl ] || .venv/bin/python $K/long_rows.py $R/segmented.jsonl $R/train-long.jsonl
[ -f runs/keep-fold/warm-after-export/hamburger_config.json ] || \
    .venv/bin/python $K/rebuild.py runs/keep-fold/warm-after-export after_fold
STEPS=$(( $(wc -l < $R/train-long.jsonl) / 8 ))
out=$R/train
if [ -f $out/last/trainer_state.pt ]; then nice -n 5 $HB train --out $out --resume > $out.log 2>&1
else
    nice -n 5 $HB train --set init=runs/keep-fold/warm-after-export --set base_mode=lora --set lora_scope=after_fold \
        --set verify_fold=segments:60:0.45:first:steps=8:p=0.7 \
        --set data=$R/train-long.jsonl --set eval_data=runs/keep-fold/val-long.jsonl --set eval_every=$STEPS \
        --set stop_loss_weight=0 --set kl_weight=1 --set token_loss_weight=0 --set kl_mix=0.5 --set lr_base=2e-4 \
        --set lr_grafted=0 --set min_lr=2e-4 --set warmup_steps=0 --set batch_size=8 --set epochs=1 --set seed=3 \
        --set max_train_steps=$STEPS --set save_every=8 --set log_every=1 --set threads=2 --set progress=false \
        --set out=$out > $out.log 2>&1
fi
mkdir -p $E/train && cp $out/metrics.jsonl $out/config.json $E/train/
[ -f $R/export/hamburger_config.json ] || $HB export --model $out/last --out $R/export
[ -f $R/dm-op/fold_reader.safetensors ] || $HB export --model hamburger/default_model --out $R/dm-op \
    --fold-reader $R/export --fold-reader-sampled-only
ROWS120=1 MODEL=$R/dm-op NAME=op bash experiments/2026-11-27-draws/run.sh
