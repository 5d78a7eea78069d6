#!/usr/bin/env bash
# The decoded comparison of decode.sh on 60 more GSM8K dev prompts (rows 60-119 of the fixed dev split, written as a
# GSM8K file: gsm8k_dev_60_120.jsonl here), to narrow the paired intervals between the training-free default fold
# (the shipped model), the CPU pilot mix10 and the GPU's lora-fold-reverse: base greedy and base-sampled are decoded
# once (with the default fold's run) and reused by the others. The same settings as decode.sh. Output:
# eval-t256-gsm8k-more-{default,mix10,reverse}[.txt] here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-gpu-fold-reverse
export MKL_CBWR=AVX2
FOLD=segments:60:first:steps=8:p=0.7  # DEFAULT_FOLD when this ran (sessions 28-32)
[ -s $E/gsm8k_dev_60_120.jsonl ] || .venv/bin/python -c "
import json
from hamburger.data.prompts import build_prompts
rows = build_prompts(['gsm8k'], 'dev', seed=0)[60:120]
print('\n'.join(json.dumps({'id': r['id'], 'question': r['prompt'], 'answer': r['answer']}) for r in rows))
" > $E/gsm8k_dev_60_120.jsonl
M=runs/cpu-pure-kl/mix10-export
[ -f $M/hamburger_config.json ] || .venv/bin/python experiments/2026-11-26-gpu-verify-fold/rebuild.py $M \
    experiments/2026-11-26-cpu-pure-kl/mix10_delta
G=runs/lora-fold-reverse-export
[ -f $G/hamburger_config.json ] || .venv/bin/python experiments/2026-11-26-gpu-verify-fold/rebuild.py $G $E/delta
run() {  # NAME FOLD [--model DIR] [--reuse-base DIR]
    local out=$E/eval-t256-gsm8k-more-$1 fold=$2
    shift 2
    [ -s $out/summary.json ] || nice -n 15 .venv/bin/hamburger eval "$@" --sample only --verify-fold $fold \
        --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 --threads 2 --tasks gsm8k \
        --gsm8k-file $E/gsm8k_dev_60_120.jsonl --limit 60 --max-new-tokens 256 --out $out > $out.txt 2>&1
}
run default $FOLD
run mix10 segments:56:p=0.7 --model $M --reuse-base $E/eval-t256-gsm8k-more-default
run reverse segments:56:p=0.7 --model $G --reuse-base $E/eval-t256-gsm8k-more-default
