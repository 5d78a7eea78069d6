#!/usr/bin/env bash
# Judge the lent GPU's lora-fold-after (session 38) as the rule in ../2026-11-27-gpu-fold-reverse/README.md fixed it:
# sampled verify_fold (T 0.7, top-p 0.9) at `segments:56:p=0.7` on the 120 long GSM8K dev prompts of that folder's
# decode.sh (the first 60) and decode_more.sh (the next 60), 256 new tokens, the same seeds, base and base-sampled
# answers reused from there. It earns more only if its worst tokens, paired with the training-free fold's over the 120
# prompts, are lower by an interval that excludes 0 (summary.py). MODEL [runs/lora-fold-after-export]: the GPU run's
# export (not committed, README.md). Output: eval-t256-gsm8k-{l60,more}-after here; ~12 min on 2 CPU threads.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-gpu-fold-after
R=experiments/2026-11-27-gpu-fold-reverse
MODEL=${MODEL:-runs/lora-fold-after-export}
[ -f $MODEL/hamburger_config.json ] || { echo "decode.sh: no checkpoint at $MODEL" >&2; exit 1; }
export MKL_CBWR=AVX2
run() {  # OUT REUSE [eval options]
    local out=$E/$1 reuse=$2
    shift 2
    [ -s $out/summary.json ] || nice -n 15 .venv/bin/hamburger eval --model $MODEL --sample only \
        --verify-fold segments:56:p=0.7 --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 \
        --threads 2 --tasks gsm8k --limit 60 --max-new-tokens 256 --reuse-base $reuse --out $out "$@" > $out.txt 2>&1
}
run eval-t256-gsm8k-l60-after experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60
run eval-t256-gsm8k-more-after $R/eval-t256-gsm8k-more-default --gsm8k-file $R/gsm8k_dev_60_120.jsonl
