#!/usr/bin/env bash
# README.md's run: data once, then train (resuming runs/cpu-lora-fold, else continuing warm_start/, else starting from
# the shipped model). Kill it any time; rerun to go on.
#   bash run.sh          data + training (niced, 2 threads)
#   bash run.sh judge    export the last checkpoint in the folding layout and decode the judge (judge-STEP/)
#   bash run.sh warm     write warm_start/lora.safetensors (the adapters, bf16, no optimizer state) from the last
#                        checkpoint
# ARM=gentle bash run.sh [judge|warm]: session 65's arm (README.md): from the shipped model, lr_base 2.5e-5,
# kl_weight 2, a step-0 eval; its run is runs/cpu-lora-fold/gentle, its judge judge-gentle-STEP/, its warm start
# warm_start/gentle/.
# ARM=gentle2 bash run.sh [judge|warm]: gentle's second epoch (README.md): from the shipped model with
# warm_start/gentle/'s adapters, on sampled answers 513-2560 (data2/, never trained on), into
# runs/cpu-lora-fold/gentle2; its judge judge-gentle2-STEP/, its warm start warm_start/gentle2/.
# ARM=gentle3 bash run.sh [judge|warm]: gentle2's next epoch (README.md, session 66): from warm_start/gentle2/ on
# sampled answers 2561-4608 (data3/), into runs/cpu-lora-fold/gentle3; judge judge-gentle3-STEP/, warm start
# warm_start/gentle3/.
# ARM=writer bash run.sh [judge]: gentle's rows, schedule and objective, but only the embedder trains (base_mode
# frozen, freeze decoder and stop_head, lr_grafted 5e-5; README.md, session 66), into runs/cpu-lora-fold/writer.
# ARM=both bash run.sh [judge]: gentle, and the writer beside it (the embedder trains at lr_grafted 5e-5; freeze decoder
# and stop_head; README.md, session 67), into runs/cpu-lora-fold/both.
# ARM=purekl bash run.sh: gentle without the cross-entropy on the data's tokens (`token_loss_weight: 0`), from the
# shipped model on gentle's rows (README.md); into runs/cpu-lora-fold/purekl.
set -euo pipefail
cd "$(dirname "$0")/../.."
X=experiments/2026-12-05-cpu-lora-fold R=runs/cpu-lora-fold ARM=${ARM:-}
# INIT: the adapters a run starts from, on the shipped model (none there: the shipped model itself); WARM: where
# `warm` writes the run's own
RUN=$R/run TAG= INIT=$X/warm_start WARM=$X/warm_start ARM_SET=() DATA=$R/data
WRITER=(--set "freeze=[decoder,stop_head]" --set lr_grafted=5.0e-5)  # of the grafted modules only the embedder trains
if [ "$ARM" = gentle ] || [ "$ARM" = gentle2 ] || [ "$ARM" = gentle3 ] || [ "$ARM" = purekl ] || [ "$ARM" = both ]; then
    RUN=$R/$ARM TAG=$ARM- INIT= WARM=$X/warm_start/$ARM
    ARM_SET=(--set lr_base=2.5e-5 --set kl_weight=2 --set eval_on_start=true)
    [ "$ARM" = gentle2 ] && DATA=$R/data2 INIT=$X/warm_start/gentle
    [ "$ARM" = gentle3 ] && DATA=$R/data3 INIT=$X/warm_start/gentle2
    [ "$ARM" = purekl ] && ARM_SET+=(--set token_loss_weight=0)
    [ "$ARM" = both ] && ARM_SET+=("${WRITER[@]}")
elif [ "$ARM" = writer ]; then
    RUN=$R/$ARM TAG=$ARM- INIT= WARM=$X/warm_start/$ARM
    ARM_SET=(--set kl_weight=2 --set eval_on_start=true --set base_mode=frozen "${WRITER[@]}")
elif [ -n "$ARM" ]; then
    echo "unknown ARM '$ARM' (known: gentle, gentle2, gentle3, purekl, writer, both)" >&2; exit 2
fi
HB=${HB:-.venv/bin/hamburger} PY=${PY:-.venv/bin/python}
export PYTHONPATH=$PWD
data() {
    [ -s $R/data/train.jsonl ] && return
    mkdir -p $R
    local S=data/distilled/smollm2-135m-instruct.train-s1.jsonl.gz
    zcat $S | head -n 512 > $R/sampled.jsonl && cp ${S%.gz}.meta.json $R/sampled.jsonl.meta.json
    nice -n 19 $HB segment --data $R/sampled.jsonl --out $R/sampled-entropies.jsonl --strategy decreasing_v2 \
        --max-steps 4 --batch-size 16 --threads 2
    $HB segment --from-dataset $R/sampled-entropies.jsonl --out $R/sampled-cut.jsonl --strategy sliding \
        --sliding-p 0.9 --max-steps 4
    $HB segment --from-dataset data/segmented/smollm2-135m-instruct.train.jsonl --out $R/greedy-cut.jsonl \
        --strategy sliding --sliding-p 0.9 --max-steps 4
    $PY recipes/split_dataset.py $R/greedy-cut.jsonl $R/data --add $R/sampled-cut.jsonl
}
sampled_rows() {  # sampled_rows NAME FIRST LAST: the committed sampled answers FIRST-LAST alone, cut as the others
    # (those of validation prompts dropped) into $R/NAME; validation stays data/val.jsonl
    local name=$1 S=data/distilled/smollm2-135m-instruct.train-s1.jsonl.gz
    [ -s $R/$name/train.jsonl ] && return
    zcat $S | sed -n $2,$3p > $R/s-$name.jsonl && cp ${S%.gz}.meta.json $R/s-$name.jsonl.meta.json
    nice -n 19 $HB segment --data $R/s-$name.jsonl --out $R/s-$name-entropies.jsonl --strategy decreasing_v2 \
        --max-steps 4 --batch-size 16 --threads 2
    $HB segment --from-dataset $R/s-$name-entropies.jsonl --out $R/s-$name-cut.jsonl --strategy sliding \
        --sliding-p 0.9 --max-steps 4
    $PY recipes/split_dataset.py $R/s-$name-cut.jsonl $R/$name
}
train() {
    local out=$RUN init=hamburger/default_model
    if [ -n "$INIT" ] && [ -f $INIT/lora.safetensors ]; then  # the shipped model with the committed adapters
        [ -f $out-init/hamburger_config.json ] || { cp -r hamburger/default_model $out-init &&
            cp $INIT/lora.safetensors $out-init/; }
        init=$out-init
    fi
    if [ -f $out/last/trainer_state.pt ]; then
        grep -q '"kind": "end"' $out/metrics.jsonl 2>/dev/null || nice -n 19 $HB train --out $out --resume
    else
        nice -n 19 $HB train --config configs/smollm2-lora-merged-more-cpu.yaml --model $init \
            --data $DATA/train.jsonl --out $out --set eval_data=$R/data/val.jsonl --set eval_max_rows=60 \
            --set single_tail=1 --set fold_tail=2 --set lr_grafted=0 --set epochs=1 --set threads=2 \
            --set save_every=10 --set eval_every=60 "${ARM_SET[@]}"
    fi
}
case "${1:-}" in
    judge)
        step=$(python3 -c "import json; print(json.load(open('$RUN/last/hamburger_config.json'))['training']['step'])")
        J=$X/judge-$TAG$step E=$RUN-export-$step
        [ -f $E/hamburger_config.json ] || $HB export --model $RUN/last --out $E --single-tail 1 --fold-tail 2
        [ -s $J/summary.json ] || $HB eval --model $E --tasks gsm8k --confidence 0.9 \
            --limit 120 --max-new-tokens 96 --threads 2 --reuse-base $X/../2026-12-03-default-knob-fold/paper-layout \
            --out $J 2> $J.log
        $PY $X/../2026-12-05-fold-distance/summary.py "cpu-lora-fold ${TAG}step $step=$J" ;;
    warm)
        rm -rf $RUN-warm && $HB export --model $RUN/last --out $RUN-warm --dtype bfloat16
        mkdir -p $WARM && cp $RUN-warm/lora.safetensors $WARM/ ;;
    *) data
       [ "$DATA" != $R/data2 ] || sampled_rows data2 513 2560
       [ "$DATA" != $R/data3 ] || sampled_rows data3 2561 4608
       train ;;
esac
