#!/usr/bin/env bash
# The base's entropies of the training answers on a CPU, between GPU windows (README.md): `hamburger segment` as the
# GPU recipe runs it (fp32, decreasing_v2, 4 steps), into data/segmented/smollm2-135m-instruct.train-ROWS.jsonl,
# committed gzipped; `recipes/lent-gpu/prepare.sh` carries them and `stage4.sh` puts them where the recipe's data steps
# find them, so those steps read them instead of running the base over every answer.
#   bash cpu_segment.sh        continue it (niced; from the committed .gz when the jsonl is gone). Kill it any time.
#   bash cpu_segment.sh pack   append the rows the .gz lacks to it (../../recipes/append_gz.sh)
# Env: ROWS ["full s1", one after the other; full: the greedy answers (data/distilled/smollm2-135m-instruct.train
# .jsonl.gz; complete since session 87, begun from the 1,951 rows committed in data/segmented); sN: sampled draw N],
# HB [.venv/bin/hamburger], THREADS [2], BATCH [8: 505 tokens/s through the base against 427 at 32, this README].
set -euo pipefail
cd "$(dirname "$0")/../.."
main() {
    local R
    for R in ${ROWS:-full s1}; do one "$R" "$@"; done
}
one() {  # ROWS [pack]
    local HB=${HB:-.venv/bin/hamburger} ROWS=$1
    shift
    local D=data/distilled/smollm2-135m-instruct.train.jsonl OUT=data/segmented/smollm2-135m-instruct.train-$ROWS.jsonl
    [ "$ROWS" = full ] || D=${D%.jsonl}-$ROWS.jsonl
    if [ "${1:-}" = pack ]; then bash recipes/append_gz.sh $OUT; return; fi
    [ -s $OUT ] || [ ! -s $OUT.gz ] || zcat $OUT.gz > $OUT
    [ -s $D ] || zcat $D.gz > $D
    [ -s $D.meta.json ] || { echo "no $D.meta.json" >&2; exit 2; }
    nice -n 19 $HB segment --data $D --out $OUT --strategy decreasing_v2 --max-steps 4 --batch-size ${BATCH:-8} \
        --threads ${THREADS:-2}
}
main "$@"
