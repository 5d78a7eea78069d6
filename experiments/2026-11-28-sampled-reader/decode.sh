#!/usr/bin/env bash
# Issue 19, session 44: the test of README.md. The shipped model with train.sh's adapters as its fold reader for
# sampled rows only (runs/sampled-reader/dm-sr), decoded by ../2026-11-27-draws/run.sh on dev rows 120-239 (arm sr).
# Session 45: ARM=fkl (or rkl) decodes train.sh's forward-KL (reverse-KL) arm, runs/sampled-reader/train-ARM, the
# same way (arm fkl or rkl).
set -euo pipefail
cd "$(dirname "$0")/../.."
R=runs/sampled-reader
ARM=${ARM:-}
name=${ARM:-sr} x=${ARM:+-$ARM}
[ -f $R/export$x/hamburger_config.json ] || .venv/bin/hamburger export --model $R/train$x/last --out $R/export$x
[ -f $R/dm-$name/fold_reader.safetensors ] || .venv/bin/hamburger export --model hamburger/default_model \
    --out $R/dm-$name --fold-reader $R/export$x --fold-reader-sampled-only
ROWS120=1 MODEL=$R/dm-$name NAME=$name bash experiments/2026-11-27-draws/run.sh
