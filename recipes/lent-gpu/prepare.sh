#!/usr/bin/env bash
# Build the payloads for a lent GPU machine (the workplace's `device` tool): two calls of < 64 MiB each,
# because the bundled GGUF (98 MB) and the transformers wheel do not fit in one. Run from anywhere; writes the
# git-ignored folders .gpu (these scripts), .gpu1 (GGUF half 1 + wheels) and .gpu2 (GGUF half 2 + data); with
# WARM=FOLDER (a HAMburger checkpoint to continue) also .gpu3/warm_start, which call 3 carries (start3.sh); with
# committed sampled answers (the recipe's SAMPLED) and the CPU's entropies of the answers also .gpu4, which a call
# between calls 1 and 2 carries (stage4.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
G=$($PY -c "from hamburger.core.base import bundled_gguf_path; print(bundled_gguf_path('smollm2-135m-instruct'))")
mkdir -p .gpu .gpu1 .gpu2 .git/info data/prompts
for d in .gpu .gpu1 .gpu2 .gpu3 .gpu4; do grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
cp recipes/lent-gpu/{env.sh,hb.py,setup1.sh,stage4.sh,start2.sh,join2.sh,start3.sh} .gpu/
cp recipes/lent-gpu/{poll.sh,bench.sh,judge.sh,train_speed.sh} .gpu/
# train_speed.sh's rows (data/segmented is over the >300 kB rule): 600 rows (its steps repeat epochs)
head -n 600 data/segmented/smollm2-135m-instruct.train.jsonl | gzip -9 > .gpu/speed-rows.jsonl.gz
cp data/segmented/smollm2-135m-instruct.train.jsonl.meta.json .gpu/speed-rows.jsonl.meta.json
# judge.sh's reading (experiments/ stays out of the tree): the script and the 80 answers it reads, in its layout
L=experiments/2026-11-26-long-answers
mkdir -p .gpu/fold-policies && cp experiments/2026-11-26-fold-policies/reading.py .gpu/fold-policies/
for t in chat gsm8k; do
    run=eval-dev-default-segments-32-c0.3-p10-t256-$t
    mkdir -p .gpu/${L#*/}/$run && cp $L/$run/examples.jsonl .gpu/${L#*/}/$run/
done
$PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 -d .gpu1 transformers==5.23.0 gguf==0.19.0
head -c 49000000 "$G" > .gpu1/gguf.part1
tail -c +49000001 "$G" > .gpu2/gguf.part2
[ -s data/prompts/train-all.jsonl ] || .venv/bin/hamburger prompts --sources t0_prompts,self_instruct,gsm8k \
    --split train --seed 0 --out data/prompts/train-all.jsonl
gzip -9 -c data/prompts/train-all.jsonl > .gpu2/prompts.jsonl.gz
cp data/distilled/smollm2-135m-instruct.train.jsonl.gz .gpu2/distilled.jsonl.gz
# the sampled answers made on a CPU (no room beside the GGUF halves: a call of their own): every draw committed, or
# DRAWS="1 2 ..." only those (the window's SAMPLED): each complete draw is ~8 MB, and a call carries at most 64 MiB
# with the tree
rm -rf .gpu4
for S in data/distilled/smollm2-135m-instruct.train-s*.jsonl.gz; do
    [ -s "$S" ] || continue
    n=${S##*-}; n=${n%.jsonl.gz}  # sN
    [ -z "${DRAWS:-}" ] || [[ " $DRAWS " == *" ${n#s} "* ]] || continue
    mkdir -p .gpu4 && cp "$S" .gpu4/distilled-$n.jsonl.gz && cp "${S%.gz}.meta.json" .gpu4/distilled-$n.jsonl.meta.json
done
# the base's entropies of those answers made on a CPU (experiments/2026-12-07-cpu-segment: 16.7 MB committed for the
# greedy rows, 16.6 for draw 1), so the data steps cut them instead of running the base over every answer;
# ENTROPIES=0 leaves them out (stage4.sh puts them where the recipe's `segment` steps write, which go on where they
# stop). Their rows go without `token_probs`, which training does not read: a third smaller (draw 1's 11.2 MB), so
# two draws with their entropies fit in one call beside the greedy rows'
without_probs() {  # IN.jsonl.gz OUT.jsonl.gz
    zcat "$1" | $PY -c "
import json, sys
for line in sys.stdin:
    row = json.loads(line)
    row.pop('token_probs', None)
    sys.stdout.write(json.dumps(row) + '\n')" | gzip -9 > "$2"
}
if [ "${ENTROPIES:-1}" != 0 ]; then
    for E in data/segmented/smollm2-135m-instruct.train-*.jsonl.gz; do
        [ -s "$E" ] || continue
        n=${E##*.train-}; n=${n%.jsonl.gz}  # full (the greedy rows) or sN
        if [ "$n" != full ]; then [ -s .gpu4/distilled-$n.jsonl.gz ] || continue; fi
        t=segmented; [ "$n" = full ] || t=segmented-$n
        mkdir -p .gpu4 && without_probs "$E" .gpu4/$t.jsonl.gz && cp "${E%.gz}.meta.json" .gpu4/$t.jsonl.meta.json
    done
fi
if [ -n "${WARM:-}" ]; then
    rm -rf .gpu3 && mkdir -p .gpu3 && cp -r "$WARM" .gpu3/warm_start
fi
du -sh .gpu .gpu1 .gpu2 ${WARM:+.gpu3} $(ls -d .gpu4 2>/dev/null)
if [ -d .gpu4 ] && [ "$(du -sm .gpu4 | cut -f1)" -gt 52 ]; then
    echo "prepare.sh: .gpu4 holds $(du -sh .gpu4 | cut -f1): with .gpu and the tree it may not fit in one call's" \
        "64 MiB; name fewer draws (DRAWS=\"1 2 3\"), or leave the entropies out (ENTROPIES=0)" >&2
fi
