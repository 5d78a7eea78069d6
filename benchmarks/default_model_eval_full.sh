#!/usr/bin/env bash
# Larger quality run of the shipped default model at its default knob (0.9) next to the base: every
# HumanEval problem, 100 chat prompts and 100 GSM8K dev problems with room for the whole answer (256 tokens).
# The full knob curve on fewer examples is benchmarks/default_model.sh. About 35 minutes on a 2-core CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
THREADS=${THREADS:-2}
hamburger eval --tasks humaneval,chat --limit 164 --max-new-tokens 128 --confidence 0.9 --batch-size 4 \
    --threads "$THREADS" --out benchmarks/results/default-model-eval-full/humaneval-chat
hamburger eval --tasks gsm8k --limit 100 --max-new-tokens 256 --confidence 0.9 --batch-size 4 \
    --threads "$THREADS" --out benchmarks/results/default-model-eval-full/gsm8k
