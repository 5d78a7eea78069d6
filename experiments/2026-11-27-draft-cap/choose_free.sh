#!/usr/bin/env bash
# Issue 19: prompt lookup and the n-gram table draft up to 10 tokens (a forward of 11 positions); after the lean
# forward's cheaper parts a forward of 4+ positions costs far more than one of 3. Shorter free drafts? Up to 5 or 3
# (:p5:n5, :p3:n3), and up to 3 with at most 2 MSD drafts (:p3:n3:d2). Same prompts and protocol as choose.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
POLICIES="c0.3:v4096:p10:n,c0.3:v4096:p5:n5,c0.3:v4096:p3:n3,c0.3:v4096:p3:n3:d2"
OUT=experiments/2026-11-27-draft-cap/choose-free-dev8-20
.venv/bin/python -m benchmarks.verify_bench --policies "$POLICIES" --offset 8 --n-chat 12 --n-math 12 \
    --max-new-tokens 128 --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1
