#!/usr/bin/env bash
# What recording each token's entropy costs `distill`, and how far the recorded entropies are from the ones `segment`
# computes with a forward of its own (README.md). A draw's settings (temperature 0.7, top-p 0.9, seed 1, 256 new
# tokens, batch 48) on the first N training prompts, in float32 and bfloat16, with and without `--no-entropies`,
# alternated, REPS times each; then `segment` (decreasing_v2, 4 steps, float32) of each dtype's first file by the
# recorded entropies (`--entropies recorded`: in either dtype) and by its own forward (`--entropies recompute`),
# compared by compare.py. Stop any other torch job first.
#   bash measure.sh > measure-HOST.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-08-recorded-entropies
export HF_HUB_OFFLINE=1
HB=${HB:-.venv/bin/hamburger} PY=${PY:-.venv/bin/python}
N=${N:-96} T=$(mktemp -d)
trap 'rm -rf $T' EXIT
P=data/prompts/train-all.jsonl
[ -s $P ] || $HB prompts --sources t0_prompts,self_instruct,gsm8k --split train --seed 0 --out $P > /dev/null
echo "# $(date -u +%FT%TZ) host $(hostname) | $(lscpu | sed -n 's/^Model name: *//p') | $(nproc) cores |" \
    "bf16 instructions: $(grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && echo yes || echo no)"
echo "# $($PY -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__,
    "transformers", transformers.__version__)') | threads ${THREADS:-2} | commit $(git rev-parse --short HEAD)" \
    "($(git status --short -- hamburger | wc -l) files changed) | first $N prompts of $P"
distill() {  # DTYPE NAME [--no-entropies]: its summary line
    $HB distill --prompts $P --out $T/$2.jsonl --limit $N --temperature 0.7 --top-p 0.9 --seed 1 --batch-size 48 \
        --max-new-tokens 256 --dtype $1 --threads ${THREADS:-2} "${@:3}" 2> $T/log | grep '^distill: wrote' \
        || { cat $T/log >&2; exit 1; }
}
for dtype in float32 bfloat16; do
    for rep in $(seq ${REPS:-2}); do
        for mode in recorded plain; do  # (the order swaps each rep)
            [ $((rep % 2)) = 0 ] && mode=$([ $mode = recorded ] && echo plain || echo recorded)
            line=$(distill $dtype $dtype-$mode-$rep $([ $mode = plain ] && echo --no-entropies))
            echo "$dtype $mode rep $rep | $line"
        done
    done
    for how in recorded recompute; do
        $HB segment --data $T/$dtype-recorded-1.jsonl --out $T/$dtype-segment-$how.jsonl --strategy decreasing_v2 \
            --max-steps 4 --batch-size 8 --threads ${THREADS:-2} --entropies $how \
            2> /dev/null | grep -E '^segment: [0-9]+ rows in' | sed "s/^/$dtype $how | /"
    done
    $PY $HERE/compare.py $T/$dtype-segment-recorded.jsonl $T/$dtype-segment-recompute.jsonl | sed "s/^/$dtype | /"
done
