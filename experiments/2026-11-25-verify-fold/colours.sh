#!/usr/bin/env bash
# Issue 19: one answer read by eye, "Name three colours." (96 new tokens, greedy, one thread): the base (the default
# model at knob 1.0), the shipped model with --fold segments:16 and the warm start with --fold segments:32, drafts
# always (--confidence 0.01). Raw JSON lines (text, token ids, groups, KV slots) in colours.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-25-verify-fold
W=experiments/2026-11-25-gpu-v2-two-sets/warm_start
export MKL_CBWR=AVX2
P="Name three colours."
{
    .venv/bin/hamburger generate --confidence 1.0 --max-new-tokens 96 --threads 1 --json "$P"
    .venv/bin/hamburger generate --mode verify --fold segments:16 --confidence 0.01 --max-new-tokens 96 --threads 1 \
        --json "$P"
    .venv/bin/hamburger generate --model $W --mode verify --fold segments:32 --confidence 0.01 --max-new-tokens 96 \
        --threads 1 --json "$P"
} 2>/dev/null > $E/colours.jsonl
