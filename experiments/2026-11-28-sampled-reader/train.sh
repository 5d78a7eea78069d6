#!/usr/bin/env bash
# Issue 19, session 44: a fold reader trained on the base's *sampled* answers. Every reader so far trained on the
# base's greedy answers, while the reader ships for sampled verify_fold only (session 43). Steps (each skipped when
# its output exists; rerun to resume):
#   1. prompts.py: the prompts of 560 of the 1120 long training rows (seed 0) -> runs/sampled-reader/prompts.jsonl;
#   2. `hamburger distill`: the base answers each once, sampled (T 0.7, top-p 0.9, seed 44, 256 tokens);
#   3. `hamburger segment` (sliding 0.9, as the CPU split) and long_rows.py (answers of >= 100 tokens);
#   4. `hamburger train` (train_reader.sh): from the shipped reader (the committed warm start at `lora_scope:
#      after_fold`, ../2026-11-27-keep-fold-full/rebuild.py), the after-fold arm's settings (LoRA rank 16, lr 2e-4
#      constant, no warm-up, pure KL half reversed, batches of 8), seed 3, STEPS steps (default 48), held-out KL on
#      the greedy held-out rows (val-long) at the end only (the start's is the after-fold runs' step 0: 0.02756).
# Session 45: KL_MIX=0 ARM=fkl (step 4 only, the same rows in the same order): pure forward KL(base || reader), which
# covers the base's spread, where the half-reversed KL may favour its likelier, more repetitive continuations; and
# KL_MIX=1 ARM=rkl: pure reverse KL(reader || base), the term a sampled answer's NLL under the base pays.
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
E=experiments/2026-11-28-sampled-reader
K=experiments/2026-11-27-keep-fold-full
R=runs/sampled-reader
STEPS=${STEPS:-48}
KL_MIX=${KL_MIX:-0.5}
ARM=${ARM:-}  # (empty: session 44's arm sr, in train/)
mkdir -p $R
[ -s $R/prompts.jsonl ] || .venv/bin/python $E/prompts.py runs/keep-fold/train-long.jsonl data/prompts/train-all.jsonl \
    $R/prompts.jsonl
nice -n 5 $HB distill --prompts $R/prompts.jsonl --out $R/sampled.jsonl --temperature 0.7 --top-p 0.9 --seed 44 \
    --max-new-tokens 256 --batch-size 16 --threads 2 > $R/distill.log 2>&1
[ -s $R/segmented.jsonl.meta.json ] || nice -n 5 $HB segment --data $R/sampled.jsonl --strategy sliding \
    --sliding-p 0.9 --out $R/segmented.jsonl --threads 2 > $R/segment.log 2>&1
[ -s $R/train-long.jsonl ] || .venv/bin/python $K/long_rows.py $R/segmented.jsonl $R/train-long.jsonl
out=$R/train${ARM:+-$ARM}
bash $E/train_reader.sh $R/train-long.jsonl $out $STEPS $KL_MIX
mkdir -p $E/${out#$R/} && cp $out/metrics.jsonl $out/config.json $E/${out#$R/}/
