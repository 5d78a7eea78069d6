#!/usr/bin/env bash
# Issue 19: after the lean forward's cheaper parts (../2026-11-27-step-profile/forward_cost.json) a base forward of 4
# positions costs ~28% more than one of 3, and one of 2 only ~3% more than one of 1. Do other draft lengths pay?
# Chosen on dev prompts 8..19 of each category (not the speed protocol's 0..7): greedy lossless verify as `generate`
# runs it (c0.3:v4096:p10:n), 128 tokens, batch 1, fp32, 2 threads, methods interleaved prompt by prompt, HF `generate`
# beside. SET picks the arms:
#   cap      (default) at most 2 or 1 MSD drafts per step (:d2, :d1)                  -> choose-dev8-20
#   free     prompt lookup and the n-gram table up to 5 or 3 tokens (:p5:n5, :p3:n3)   -> choose-free-dev8-20
#   first    more eager MSD drafting: stop head at 0.2 or 0.1, always one draft (k1)  -> choose-first-dev8-20
#   drafter  session 36's verify drafter (MODEL, default runs/dm-drafter, made by
#            ../2026-11-27-verify-drafter/ship.py) against the model's own pair (:m)  -> choose-drafter-dev8-20
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=c0.3:v4096:p10:n
SET=${SET:-cap}
MODEL_ARGS=()
case "$SET" in
    cap) POLICIES="$BASE,$BASE:d2,$BASE:d1"; OUT=choose-dev8-20 ;;
    free) POLICIES="$BASE,c0.3:v4096:p5:n5,c0.3:v4096:p3:n3,c0.3:v4096:p3:n3:d2"; OUT=choose-free-dev8-20 ;;
    first) POLICIES="$BASE,c0.2:v4096:p10:n,c0.1:v4096:p10:n,k1:v4096:p10:n"; OUT=choose-first-dev8-20 ;;
    drafter) POLICIES="$BASE:m,$BASE,c0.2:v4096:p10:n"; OUT=choose-drafter-dev8-20
             MODEL_ARGS=(--model "${MODEL:-runs/dm-drafter}") ;;
    *) echo "unknown SET $SET (cap, free, first, drafter)" >&2; exit 2 ;;
esac
OUT=experiments/2026-11-27-draft-cap/$OUT
.venv/bin/python -m benchmarks.verify_bench "${MODEL_ARGS[@]}" --policies "$POLICIES" --offset 8 --n-chat 12 \
    --n-math 12 --max-new-tokens 128 --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
