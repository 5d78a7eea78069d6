#!/usr/bin/env bash
# Stage 2 of README.md: the CPU pilot (its data, the arms greedy2 and sampled side by side, one thread each, then
# their measurements and the comparison). Every step resumes: rerun after a kill.
# Env: PY [.venv/bin/python], HB [.venv/bin/hamburger].
set -euo pipefail
cd "$(dirname "$0")/../.."
main() {
    local PY=${PY:-.venv/bin/python} HB=${HB:-.venv/bin/hamburger} X=experiments/2026-12-03-sampled-rows
    local R=runs/sampled-rows/pilot S=data/distilled/smollm2-135m-instruct.train-s1.jsonl
    export PYTHONPATH=$PWD
    mkdir -p $R
    if [ ! -s $R/both/train.jsonl ]; then
        [ "$(wc -l < $S)" -ge 512 ] || { echo "the CPU distillation has not written 512 rows yet"; exit 2; }
        head -n 512 $S > $R/sampled.jsonl && cp $S.meta.json $R/sampled.jsonl.meta.json
        $PY $X/greedy_rows.py $R/sampled.jsonl data/distilled/smollm2-135m-instruct.train.jsonl.gz $R/greedy.jsonl
        for name in greedy sampled; do
            $HB segment --data $R/$name.jsonl --out $R/$name-entropies.jsonl --strategy decreasing_v2 \
                --max-steps 4 --batch-size 16 --threads 2
            $HB segment --from-dataset $R/$name-entropies.jsonl --out $R/$name-cut.jsonl --strategy sliding \
                --sliding-p 0.9 --max-steps 4
        done
        $PY recipes/split_dataset.py $R/greedy-cut.jsonl $R/greedy
        $PY recipes/split_dataset.py $R/greedy-cut.jsonl $R/both --add $R/sampled-cut.jsonl
    fi
    arm greedy2 $R/greedy/train.jsonl 2 > $R/greedy2.log 2>&1 &
    arm sampled $R/both/train.jsonl 1 > $R/sampled.log 2>&1 &
    wait
    for name in greedy2 sampled; do
        [ -s $X/pilot-$name.json ] || $PY $X/measure.py --greedy runs/sampled-rows/greedy-cut.jsonl \
            --sampled runs/sampled-rows/sampled-cut.jsonl --model $R/$name-export --out $X/pilot-$name.json \
            > $X/pilot-$name.txt
    done
    $PY $X/compare.py $X/results.json $X/pilot-greedy2.json $X/pilot-sampled.json > $X/pilot-summary.txt
    cat $X/pilot-summary.txt
}
arm() {  # NAME DATA EPOCHS: train from the shipped model (or resume), then export
    local out=runs/sampled-rows/pilot/$1
    if [ -f $out/last/trainer_state.pt ]; then
        grep -q '"kind": "end"' $out/metrics.jsonl 2>/dev/null || ${HB:-.venv/bin/hamburger} train --out $out --resume
    else
        ${HB:-.venv/bin/hamburger} train --config configs/smollm2-lora-merged-more-cpu.yaml \
            --model hamburger/default_model --data $2 --out $out --set eval_data=null --set 'recut=[]' \
            --set epochs=$3 --set warmup_steps=10 --set threads=1 --set save_every=16 --set eval_every=100000
    fi
    [ -f $out-export/hamburger_config.json ] || ${HB:-.venv/bin/hamburger} export --model $out/last --out $out-export
}
main "$@"
