#!/usr/bin/env bash
# Issue 19: speed and KV of the shipped default model's verify modes on longer answers: the protocol of
# experiments/2026-11-26-gpu-verify-fold/speed.sh (8 chat + 8 GSM8K dev prompts, greedy, batch 1, fp32, 2 threads,
# MKL_CBWR=AVX2, methods interleaved prompt by prompt, HF `generate` and HF prompt lookup beside them;
# benchmarks/verify_bench.py; stop head 0.3, prompt lookup 10, the 4096-token draft vocabulary, with folding
# segments:32 and without) at TOKENS new tokens (default 256). Run on a quiet machine (pause CPU training first).
# Output: speed_tTOKENS.json/.log here (OUT_DIR: elsewhere). FOLD=segments:48 times that folding alone
# (speed_tTOKENS-segments-48.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${OUT_DIR:-experiments/2026-11-26-long-answers}
TOKENS=${TOKENS:-256}
NAME=t$TOKENS POLICIES=c0.3:v4096:p10@segments:32,c0.3:v4096:p10
[ -z "${FOLD:-}" ] || NAME=t$TOKENS-${FOLD//:/-} POLICIES=c0.3:v4096:p10@$FOLD
export MKL_CBWR=AVX2
[ -s $D/speed_$NAME.json ] || .venv/bin/python -m benchmarks.verify_bench \
    --policies $POLICIES --n-chat 8 --n-math 8 --max-new-tokens $TOKENS \
    --threads 2 --skip-costs --out $D/speed_$NAME.json > $D/speed_$NAME.log 2>&1
