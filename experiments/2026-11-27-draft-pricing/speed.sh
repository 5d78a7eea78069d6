#!/usr/bin/env bash
# Issue 19: decode speed of the shipped default model with and without its n-gram draft table, on one machine, in
# one run. benchmarks/verify_bench.py: 8 chat + 8 GSM8K dev prompts (0..7: not those engine_ab.py chose the table's
# thresholds on), greedy, batch 1, fp32, 2 threads, methods interleaved prompt by prompt, MKL_CBWR as
# `import hamburger` sets it; HF `generate` and HF prompt lookup beside five policies of our engine:
#   k0:v4096                       our own decoding loop and cache, one token per forward (the base, no drafts)
#   c0.3:v4096:p10                 `--mode verify` without the table (`--ngrams 0`)
#   c0.3:v4096:p10:n               `--mode verify`'s default since this session (the table drafts where lookup can't)
#   c0.3:v4096:p10@FOLD            `--mode verify_fold` without the table
#   c0.3:v4096:p10:n@FOLD          `--mode verify_fold`'s default since this session
# TOKENS (default 128); RUN=2 names a repeat. Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOKENS=${TOKENS:-128}
FOLD=segments:60:0.45:first:steps=8:p=0.7
# SAMPLE=1: sampled decoding (T 0.7, top-p 0.9, seed 0 on every prompt; outputs are not HF's) without and with the
# table, lossless verify only (speed-t128-sampled.json)
POLICIES="k0:v4096,c0.3:v4096:p10,c0.3:v4096:p10:n,c0.3:v4096:p10@$FOLD,c0.3:v4096:p10:n@$FOLD"
[ -z "${SAMPLE:-}" ] || POLICIES="c0.3:v4096:p10,c0.3:v4096:p10:n"
OUT=experiments/2026-11-27-draft-pricing/speed-t$TOKENS${SAMPLE:+-sampled}${RUN:+-run$RUN}
.venv/bin/python -m benchmarks.verify_bench --policies "$POLICIES" ${SAMPLE:+--sample} \
    --n-chat 8 --n-math 8 --max-new-tokens "$TOKENS" --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
