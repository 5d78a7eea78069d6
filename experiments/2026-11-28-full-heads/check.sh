#!/usr/bin/env bash
# heads.py's exactness check (README): one 200-token verify_fold answer through the patch with no full head must be
# the plain fold's, and with all 90 full heads lossless verify's (the same text). Writes check.txt.
#   bash experiments/2026-11-28-full-heads/check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-28-full-heads
P="Write a detailed explanation of how photosynthesis works, step by step."
run() { "$@" --max-new-tokens 200 --threads 2 "$P" 2>/dev/null | md5sum | cut -d' ' -f1; }
ALL=$(.venv/bin/python -c 'import json; print(json.dumps([[l, g] for l in range(30) for g in range(3)]))')
fold=$(run .venv/bin/hamburger generate --mode verify_fold)
none=$(FULL_HEADS='[]' run .venv/bin/python $E/heads.py generate --mode verify_fold)
all=$(FULL_HEADS="$ALL" run .venv/bin/python $E/heads.py generate --mode verify_fold)
lossless=$(run .venv/bin/hamburger generate --mode verify)
{ echo "plain fold $fold | patch, no full head $none | same: $([ $fold = $none ] && echo yes || echo no)"
  echo "lossless verify $lossless | patch, all 90 full $all | same: $([ $lossless = $all ] && echo yes || echo no)"
} | tee $E/check.txt
