#!/usr/bin/env bash
# The library's head scoring (`hamburger heads`) on session 48's answers (the default model's own sampled answers to
# training prompts, the first 20 of at least 160 tokens), to set beside ../2026-11-28-full-heads/scores.jsonl (the
# experiment's scorer): the same heads chosen? Nothing is saved into the default model.
#   bash scores.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-full-head-cache
export MKL_CBWR=AVX2
answers=experiments/2026-11-28-on-policy/answers.jsonl.gz
[ -s $E/scores.jsonl ] || nice -n 10 .venv/bin/hamburger heads --answers $answers \
    --limit 20 --min-tokens 160 --count 4 --threads 2 --out $E/scores.jsonl 2> $E/scores.log
