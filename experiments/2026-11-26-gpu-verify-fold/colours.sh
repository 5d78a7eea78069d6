#!/usr/bin/env bash
# Issue 19: "Name three colours." (128 new tokens, greedy, one thread) read by eye with the model trained in
# verify-fold's layout (MODEL, default runs/gpu-s24/lora-verify-fold-export: rebuild.py makes it), `--mode verify_fold`
# with the CLI's defaults (segments:32, lookup 10, stop head 0.3); the default model's and the base's answers are
# experiments/2026-11-26-verify-speed/colours.jsonl. Raw JSON line: colours.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2
MODEL=${MODEL:-runs/gpu-s24/lora-verify-fold-export}
[ -f "$MODEL/hamburger_config.json" ] || .venv/bin/python experiments/2026-11-26-gpu-verify-fold/rebuild.py "$MODEL"
.venv/bin/hamburger generate --model "$MODEL" --mode verify_fold \
    --max-new-tokens 128 --threads 1 --json "Name three colours." 2>/dev/null \
    > experiments/2026-11-26-gpu-verify-fold/colours.jsonl
