#!/usr/bin/env bash
# Issue 19: where the shipped engine stands after session 37 (the lean forward's cheaper norms, rotation and grouped attention),
# by the speed protocol of ../2026-11-27-draft-pricing/: benchmarks/verify_bench.py, 8 chat + 8 GSM8K dev prompts 0..7,
# batch 1, fp32, 2 threads, methods interleaved prompt by prompt, HF `generate` and HF prompt lookup beside
#   k0:v4096                the engine's own loop, one token per forward
#   c0.3:v4096:p10:n        `--mode verify` as `generate` runs it
#   c0.3:v4096:p10:n@FOLD   `--mode verify_fold` as `generate` runs it
# greedy, 128 tokens (TOKENS=256: 256); SAMPLE=1: sampled (T 0.7, top-p 0.9, seed 0 per prompt; sampled rows never use the table).
set -euo pipefail
cd "$(dirname "$0")/../.."
FOLD=segments:60:0.45:first:steps=8:p=0.7
POLICIES="k0:v4096,c0.3:v4096:p10:n,c0.3:v4096:p10:n@$FOLD"
TOKENS=${TOKENS:-128}
OUT=experiments/2026-11-27-step-profile/speed-t$TOKENS${RUN:+-run$RUN}${SAMPLE:+-sampled}
.venv/bin/python -m benchmarks.verify_bench --policies "$POLICIES" ${SAMPLE:+--sample} \
    --n-chat 8 --n-math 8 --max-new-tokens "$TOKENS" --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
