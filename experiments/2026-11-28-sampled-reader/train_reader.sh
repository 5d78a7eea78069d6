#!/usr/bin/env bash
# The reader runs' training step (sessions 44-45's train.sh, session 47's ../2026-11-28-on-policy/run.sh): from the
# shipped reader (the committed warm start at `lora_scope: after_fold`, ../2026-11-27-keep-fold-full/rebuild.py), the
# after-fold arm's settings (LoRA rank 16, lr 2e-4 constant, no warm-up, pure KL to the unchanged base with KL_MIX of
# it reversed, batches of 8, the default fold's layout), seed 3, STEPS steps, held-out KL on the greedy held-out rows
# (val-long) at the end only. Resumes OUT when it holds a checkpoint. Run from the checkout root.
#   bash experiments/2026-11-28-sampled-reader/train_reader.sh DATA OUT STEPS [KL_MIX (default 0.5)]
set -euo pipefail
data=$1 out=$2 steps=$3 mix=${4:-0.5}
hb=.venv/bin/hamburger warm=runs/keep-fold/warm-after-export
[ -f $warm/hamburger_config.json ] || .venv/bin/python experiments/2026-11-27-keep-fold-full/rebuild.py $warm after_fold
if [ -f $out/last/trainer_state.pt ]; then nice -n 5 $hb train --out $out --resume
else
    nice -n 5 $hb train --set init=$warm --set base_mode=lora --set lora_scope=after_fold \
        --set verify_fold=segments:60:0.45:first:steps=8:p=0.7 \
        --set data=$data --set eval_data=runs/keep-fold/val-long.jsonl --set eval_every=$steps \
        --set stop_loss_weight=0 --set kl_weight=1 --set token_loss_weight=0 --set kl_mix=$mix --set lr_base=2e-4 \
        --set lr_grafted=0 --set min_lr=2e-4 --set warmup_steps=0 --set batch_size=8 --set epochs=1 --set seed=3 \
        --set max_train_steps=$steps --set save_every=8 --set log_every=1 --set threads=2 --set progress=false \
        --set out=$out
fi > $out.log 2>&1
