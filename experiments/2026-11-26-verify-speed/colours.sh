#!/usr/bin/env bash
# Issue 19: one answer read by eye, "Name three colours." (128 new tokens, greedy, one thread), the shipped default
# model: the base (knob 1.0), lossless verify mode and verify mode with folding segments:32, both with the CLI's
# defaults now (prompt lookup 10, the draft vocabulary) at stop head 0.3. Raw JSON lines in colours.jsonl; the
# README's first command in first_command.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2
P="Name three colours."
common=(--max-new-tokens 128 --threads 1 --json)
{
    .venv/bin/hamburger generate --confidence 1.0 "${common[@]}" "$P"
    .venv/bin/hamburger generate --mode verify --confidence 0.3 "${common[@]}" "$P"
    .venv/bin/hamburger generate --mode verify --fold segments:32 --confidence 0.3 "${common[@]}" "$P"
} 2>/dev/null > experiments/2026-11-26-verify-speed/colours.jsonl
# The README's first command as it runs now (lossless verify mode, the defaults): first_command.jsonl.
.venv/bin/hamburger generate --threads 1 --json "What is 2+2?" 2>/dev/null \
    > experiments/2026-11-26-verify-speed/first_command.jsonl
