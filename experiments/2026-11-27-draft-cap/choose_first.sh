#!/usr/bin/env bash
# Issue 19: after the lean forward's cheaper parts a forward of 2 positions costs ~2.5% more than one of 1
# (../2026-11-27-step-profile/forward_cost.json), so a first MSD draft is almost free. Draft more eagerly? The stop
# head at confidence 0.2 or 0.1 instead of 0.3, or always exactly one MSD draft (k1). Same prompts and protocol as
# choose.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
POLICIES="c0.3:v4096:p10:n,c0.2:v4096:p10:n,c0.1:v4096:p10:n,k1:v4096:p10:n"
OUT=experiments/2026-11-27-draft-cap/choose-first-dev8-20
.venv/bin/python -m benchmarks.verify_bench --policies "$POLICIES" --offset 8 --n-chat 12 --n-math 12 \
    --max-new-tokens 128 --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
