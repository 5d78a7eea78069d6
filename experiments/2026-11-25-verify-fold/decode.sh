#!/usr/bin/env bash
# Issue 19: verify mode with folding (engine/folding.py), no training. The GPU warm start (its MSD drafts; its adapters
# and embedder read the folded slots) on the 24 dev prompts of benchmarks/decode_fidelity.py (96 tokens, greedy, one
# thread): foldings by the base's entropy cut (segments, sliding 0.9) and by forwards, with windows of 4-16 tokens,
# drafting always (knob 0.01) or by the stop head at 0.5 (verify mode's default). The default mode's curves on the same
# prompts and model are experiments/2026-11-25-fold-tail/decode_fidelity_delay.json; equal_tau.txt compares them.
# Steps are skipped when their output exists.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PY:-../../.venv/bin/python}
W=../2026-11-25-gpu-v2-two-sets/warm_start
export MKL_CBWR=AVX2
[ -s decode_fidelity.json ] || $PY ../../benchmarks/decode_fidelity.py --models $W --single-tails none \
    --verify-folds segments:8,segments:4,segments:16,forwards:4,forwards:8 --confidence 0.01 --threads 1 \
    --out decode_fidelity.json > decode_fidelity.log 2>&1
[ -s decode_fidelity_draft05.json ] || $PY ../../benchmarks/decode_fidelity.py --models $W --single-tails none \
    --verify-folds segments:8,forwards:4 --confidence 0.5 --threads 1 --out decode_fidelity_draft05.json \
    > decode_fidelity_draft05.log 2>&1
# a longer window, verify mode's default drafting, and the shipped default model (v2) at the same folding
[ -s decode_fidelity_more.json ] || $PY ../../benchmarks/decode_fidelity.py --models $W --single-tails none \
    --verify-folds segments:32,segments:16 --confidence 0.01,0.5 --threads 1 --out decode_fidelity_more.json \
    > decode_fidelity_more.log 2>&1
[ -s decode_fidelity_default.json ] || $PY ../../benchmarks/decode_fidelity.py --models ../../hamburger/default_model \
    --single-tails none --verify-folds segments:16 --confidence 0.01 --threads 1 --out decode_fidelity_default.json \
    > decode_fidelity_default.log 2>&1
