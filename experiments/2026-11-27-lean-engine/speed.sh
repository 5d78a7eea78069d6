#!/usr/bin/env bash
# Issue 19: decode speed of the shipped default model before and after session 34's engine changes (a lean pass
# through Llama-family stacks, KV cache layers with spare slots, LoRA switches without module walks, the verify LM
# head by chunks of rows), on one machine, in one session. benchmarks/verify_bench.py: 8 chat + 8 GSM8K dev prompts,
# greedy, batch 1, fp32, 2 threads, methods interleaved prompt by prompt, MKL_CBWR as `import hamburger` sets it;
# HF `generate` and HF prompt lookup beside three policies of our engine:
#   k0:v4096                       our own decoding loop and cache, one token per forward (the base, no drafts)
#   c0.3:v4096:p10                 `--mode verify`'s default (lossless)
#   c0.3:v4096:p10@FOLD            `--mode verify_fold`'s default fold
# REV=<commit>: run that commit's code (a temporary git worktree; its speed_REV.json lands here), else the working
# tree (speed_now-tTOKENS.json). TOKENS (default 128); RUN=2 names a repeat (speed_now-tTOKENS-run2.json). Run on a
# quiet machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-11-27-lean-engine
TOKENS=${TOKENS:-128}
FOLD=segments:60:0.45:first:steps=8:p=0.7
NAME=${REV:-now}-t$TOKENS${RUN:+-run$RUN}
ROOT=$PWD RUN_IN=$PWD
if [ -n "${REV:-}" ]; then
    RUN_IN=$(mktemp -d)/tree
    git worktree add -q --detach "$RUN_IN" "$REV"
    trap 'git worktree remove --force "$RUN_IN"' EXIT
fi
OUT=experiments/2026-11-27-lean-engine/speed_$NAME  # (relative to the tree that runs; copied here after)
if [ ! -s "$OUT.json" ]; then
    (cd "$RUN_IN" && mkdir -p "$(dirname "$OUT")" && "$ROOT/.venv/bin/python" -m benchmarks.verify_bench \
        --policies "k0:v4096,c0.3:v4096:p10,c0.3:v4096:p10@$FOLD" --n-chat 8 --n-math 8 --max-new-tokens "$TOKENS" \
        --threads 2 --skip-costs --out "$OUT.json" > "$OUT.log" 2>&1)
    [ "$RUN_IN" = "$ROOT" ] || cp "$RUN_IN/$OUT.json" "$RUN_IN/$OUT.log" "$HERE/"
fi
