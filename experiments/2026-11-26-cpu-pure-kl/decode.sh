#!/usr/bin/env bash
# After read.sh: does the pure-KL reading hold sampled verify_fold at the base's sampled quality where the shipped
# default fold does not (experiments/2026-11-26-sampled-fold/, step 2: 60 GSM8K dev prompts at 256 new tokens, NLL per
# token +0.061 [+0.021, +0.100] and worst-token NLL +0.66 [+0.35, +1.00] against base-sampled)? `pure`'s end point,
# verify_fold sampled at `segments:56:p=0.7` (merged slots; the widest window of read.sh's whose KV at 128 tokens
# stays <= 0.63, the lent-GPU bar's: reading-pure-windows.txt), drafting as `generate` does, on the same prompts, seeds
# and base-sampled answers (reused). Fixed before the run: it holds if its NLL-per-token and worst-token differences
# from base-sampled are <= 0 by their point estimates (the interval verdicts reported beside them), and it improves
# on the default fold if both points are below the default's. Output: eval-t256-gsm8k-l60-ARM-w56[.txt] here
# (ARM: run.sh's arm, default pure).
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-cpu-pure-kl
export MKL_CBWR=AVX2
ARM=${ARM:-pure}
out=$E/eval-t256-gsm8k-l60-$ARM-w56
[ -s $out/summary.json ] || .venv/bin/hamburger eval --model runs/cpu-pure-kl/$ARM-export --sample only \
    --verify-fold segments:56:p=0.7 --verify-confidence 0.3 --verify-lookup 10 --confidence "" --batch-size 8 \
    --threads 2 --tasks gsm8k --limit 60 --max-new-tokens 256 \
    --reuse-base experiments/2026-11-26-long-math-60/eval-dev-default-segments-32-c0.3-p10-t256-gsm8k-l60 \
    --out $out > $out.txt 2>&1
