#!/usr/bin/env bash
# Data and measurement of this experiment (README.md). Resumable: rerun after a kill.
# Env: PY [.venv/bin/python], HB [.venv/bin/hamburger], N [192] validation prompts, THREADS [2].
set -euo pipefail
cd "$(dirname "$0")/../.."
main() {
    local PY=${PY:-.venv/bin/python} HB=${HB:-.venv/bin/hamburger} N=${N:-192} T=${THREADS:-2}
    local X=experiments/2026-12-03-sampled-rows R=runs/sampled-rows BASE=smollm2-135m-instruct
    mkdir -p $R
    export PYTHONPATH=$PWD
    [ -s data/prompts/train-all.jsonl ] || $HB prompts --sources t0_prompts,self_instruct,gsm8k --split train --seed 0 \
        --out data/prompts/train-all.jsonl
    [ -s $R/val-s1-prompts.jsonl ] || $PY recipes/sampled_prompts.py data/prompts/train-all.jsonl \
        $R/val-s1-prompts.jsonl --split val
    $HB distill --prompts $R/val-s1-prompts.jsonl --out $R/sampled.jsonl --temperature 0.7 --top-p 0.9 --seed 1 \
        --dtype bfloat16 --batch-size 32 --threads $T --max-new-tokens 256 --limit $N
    # the same prompts' greedy answers, from the committed distilled rows (their meta beside them)
    $PY $X/greedy_rows.py $R/sampled.jsonl data/distilled/$BASE.train.jsonl.gz $R/greedy.jsonl
    for name in greedy sampled; do
        $HB segment --data $R/$name.jsonl --out $R/$name-entropies.jsonl --strategy decreasing_v2 --max-steps 4 \
            --batch-size 16 --threads $T
        $HB segment --from-dataset $R/$name-entropies.jsonl --out $R/$name-cut.jsonl --strategy sliding \
            --sliding-p 0.9 --max-steps 4
    done
    $PY $X/measure.py --greedy $R/greedy-cut.jsonl --sampled $R/sampled-cut.jsonl --threads $T \
        --out $X/results.json > $X/summary.txt
    cat $X/summary.txt
}
main "$@"
