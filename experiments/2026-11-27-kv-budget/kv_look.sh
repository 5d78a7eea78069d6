#!/usr/bin/env bash
# The mechanics of a KV budget before any quality run: the answers' KV (and tau) of greedy verify_fold at 128 new
# tokens on the speed protocol's 8 chat + 8 GSM8K dev prompts (benchmarks/verify_bench.py, one repeat), for the
# default fold and budgeted folds. Only KV is read from it, to choose the arms of run.sh (the budget must keep the
# answers' KV at 128 tokens, pooled over chat and math, within the issue's 0.67). Its speeds mean nothing: another
# job may share the cores. (256 tokens: run.sh's evals report the answers' KV.)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-kv-budget
D=segments:60:0.45:first:steps=8:p=0.7
P=c0.3:v4096:p10:n
for tokens in 128; do
    [ -s $E/kv_look_t$tokens.json ] || nice -n 10 .venv/bin/python -m benchmarks.verify_bench --policies \
        "$P@$D,$P@$D:kv=0.65,$P@segments:32:first:steps=8:p=0.7:kv=0.65,$P@segments:16:first:steps=8:p=0.7:kv=0.6" \
        --n-chat 8 --n-math 8 --max-new-tokens $tokens --repeats 1 --threads 2 --skip-costs \
        --out $E/kv_look_t$tokens.json > $E/kv_look_t$tokens.log 2>&1
done
