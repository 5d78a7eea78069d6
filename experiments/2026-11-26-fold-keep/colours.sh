#!/usr/bin/env bash
# Issue 19, session 28: the README's verify_fold example with verify_fold's new default folding
# (segments:60:first:steps=8:p=0.7), the shipped default model, greedy, one thread: "Name three colours." at 128 new
# tokens, as the CLI prints it without a terminal (groups |-separated, the summary line last), in colours.txt; the
# same as a JSON line in colours.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-26-fold-keep
export MKL_CBWR=AVX2
P="Name three colours."
n=128
echo "\$ hamburger generate --mode verify_fold --max-new-tokens $n \"$P\"" > $E/colours.txt
.venv/bin/hamburger generate --mode verify_fold --max-new-tokens $n --threads 1 "$P" 2>&1 >> $E/colours.txt \
    | grep '^\[' >> $E/colours.txt
.venv/bin/hamburger generate --mode verify_fold --max-new-tokens $n --threads 1 --json "$P" 2>/dev/null \
    > $E/colours.jsonl
