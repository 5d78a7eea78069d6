#!/usr/bin/env bash
# Issue 19: after the lean forward's cheaper parts a 4-position base forward costs ~28% more than a 3-position one
# (../2026-11-27-step-profile/forward_cost.json), so should the MSD draft at most 2 tokens per step (:d2) or 1 (:d1)?
# Chosen on dev prompts 8..19 of each category (not the speed protocol's 0..7): greedy lossless verify as `generate`
# runs it, 128 tokens, batch 1, fp32, 2 threads, methods interleaved prompt by prompt, HF `generate` beside.
set -euo pipefail
cd "$(dirname "$0")/../.."
POLICIES="c0.3:v4096:p10:n,c0.3:v4096:p10:n:d2,c0.3:v4096:p10:n:d1"
OUT=experiments/2026-11-27-draft-cap/choose-dev8-20
.venv/bin/python -m benchmarks.verify_bench --policies "$POLICIES" --offset 8 --n-chat 12 --n-math 12 \
    --max-new-tokens 128 --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
