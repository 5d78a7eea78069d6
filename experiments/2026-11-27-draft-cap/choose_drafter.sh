#!/usr/bin/env bash
# Issue 19: session 36's CPU-trained verify drafter lifted tokens per forward (1.93 -> 2.05) but not speed, when an
# extra draft position cost more than now. Again on the new cost curve: the default model with that drafter put in
# (MODEL, made by ../2026-11-27-verify-drafter/ship.py as its README says), its own pair (:m) against the drafter at
# the stop head's 0.3 and 0.2. Same prompts and protocol as choose.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL=${MODEL:-runs/dm-drafter}
POLICIES="c0.3:v4096:p10:n:m,c0.3:v4096:p10:n,c0.2:v4096:p10:n"
OUT=experiments/2026-11-27-draft-cap/choose-drafter-dev8-20
.venv/bin/python -m benchmarks.verify_bench --model "$MODEL" --policies "$POLICIES" --offset 8 --n-chat 12 --n-math 12 \
    --max-new-tokens 128 --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
