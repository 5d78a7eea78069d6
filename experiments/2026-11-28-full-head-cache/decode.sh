#!/usr/bin/env bash
# The arms of README, on 120 dev GSM8K prompts no arm had decoded (dev rows 360-479), 256 tokens, three draws
# (T 0.7, top-p 0.9, the seeds every draws arm uses), each into eval-rows360-480-ARM, skipped when done:
#   ARM=base bash decode.sh       # the base's greedy answers and its three sampled draws (the issue's references)
#   ARM=fh4 bash decode.sh        # the shipped model with the library's full heads (chosen.jsonl's four)
#   ARM=af-reader bash decode.sh  # the shipped model as it is (no full heads)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-full-head-cache
out=$E/eval-rows360-480-$ARM
export MKL_CBWR=AVX2  # as every draws arm
common=(--sample only --draws 3 --confidence "" --batch-size 8 --threads 2 --max-new-tokens 256 --tasks gsm8k
        --gsm8k-file $E/gsm8k_dev_360_480.jsonl --limit 120 --out $out)
fold=(--verify-fold segments:60:0.45:first:steps=8:p=0.7 --verify-confidence 0.3 --verify-lookup 10
      --reuse-base $E/eval-rows360-480-base)
case $ARM in
    base) args=() ;;
    fh4) heads=$(.venv/bin/python experiments/2026-11-28-full-heads/chosen.py 4 |
                 .venv/bin/python -c "import json, sys; print(','.join(f'{l}:{g}' for l, g in json.load(sys.stdin)))")
         args=("${fold[@]}" --full-heads "$heads") ;;
    af-reader) args=("${fold[@]}" --full-heads none) ;;
    *) echo "unknown ARM $ARM" >&2; exit 2 ;;
esac
[ -s $out/summary.json ] || nice -n 10 .venv/bin/hamburger eval "${common[@]}" "${args[@]}" > $out.txt 2>&1
