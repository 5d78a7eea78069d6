#!/usr/bin/env bash
# A training draw of sampled answers on a CPU, between GPU windows (README.md): one answer per training prompt at
# temperature 0.7, top-p 0.9, seed 1, ids ID#sN, into data/distilled/smollm2-135m-instruct.train-sN.jsonl
# (N: DRAW; draws 1 to 5 and 7 are complete (4 and 7 in bf16, the others fp32), draw 6 (fp32) began in session 81 and
# draw 8 (bf16) in session 86).
#   bash cpu_distill.sh        continue it (niced; from the committed .gz when the jsonl is gone). Kill it any time.
#   bash cpu_distill.sh pack   append the rows the .gz lacks to it (../../recipes/append_gz.sh)
# Env: DRAW [1], HB [.venv/bin/hamburger], PY [.venv/bin/python], THREADS [2], BATCH [48: 1.13x 32 on a bf16 host,
# ../2026-12-07-continuous-distill/], DTYPE [a draw keeps the dtype it began with (its meta, which distill checks on
# resume); a new draw takes bfloat16 where the CPU has bf16 instructions (avx512_bf16 or amx_bf16) and float32
# elsewhere: bf16 on an AVX2-only host ran 2.75x slower, dtype-speed-session74.txt]. A float32 draw records each
# token's entropy (since session 89), which `segment` cuts by; a bf16 draw does not, since the recipe cuts in float32
# and would not take them (../2026-12-08-recorded-entropies/), so the committed file stays as lean as before.
set -euo pipefail
cd "$(dirname "$0")/../.."
main() {
    local HB=${HB:-.venv/bin/hamburger} PY=${PY:-.venv/bin/python}
    local N=${DRAW:-1}
    local S=data/distilled/smollm2-135m-instruct.train-s$N.jsonl SP=data/prompts/train-sampled-s$N.jsonl
    if [ "${1:-}" = pack ]; then bash recipes/append_gz.sh $S; return; fi
    [ -s $S ] || [ ! -s $S.gz ] || zcat $S.gz > $S
    [ -s data/prompts/train-all.jsonl ] || $HB prompts --sources t0_prompts,self_instruct,gsm8k --split train \
        --seed 0 --out data/prompts/train-all.jsonl
    [ -s $SP ] || $PY recipes/sampled_prompts.py data/prompts/train-all.jsonl $SP --draw $N
    local dtype=${DTYPE:-}
    [ -n "$dtype" ] || [ ! -s $S.meta.json ] || dtype=$(sed -n 's/.*"dtype": "\(.*\)".*/\1/p' $S.meta.json)
    [ -n "$dtype" ] || { grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && dtype=bfloat16 || dtype=float32; }
    echo "draw $N: $dtype"
    nice -n 19 $HB distill --prompts $SP --out $S --temperature 0.7 --top-p 0.9 --seed 1 --batch-size ${BATCH:-48} \
        --dtype $dtype --threads ${THREADS:-2} --max-new-tokens 256 $([ $dtype = float32 ] || echo --no-entropies)
}
main "$@"
