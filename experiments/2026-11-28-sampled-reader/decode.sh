#!/usr/bin/env bash
# Issue 19, session 44: the test of README.md. The shipped model with train.sh's adapters as its fold reader for
# sampled rows only (runs/sampled-reader/dm-sr), decoded by ../2026-11-27-draws/run.sh on dev rows 120-239 (arm sr).
set -euo pipefail
cd "$(dirname "$0")/../.."
R=runs/sampled-reader
[ -f $R/export/hamburger_config.json ] || .venv/bin/hamburger export --model $R/train/last --out $R/export
[ -f $R/dm-sr/fold_reader.safetensors ] || .venv/bin/hamburger export --model hamburger/default_model --out $R/dm-sr \
    --fold-reader $R/export --fold-reader-sampled-only
ROWS120=1 MODEL=$R/dm-sr NAME=sr bash experiments/2026-11-27-draws/run.sh
