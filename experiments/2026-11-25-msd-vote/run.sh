#!/usr/bin/env bash
# The five decodes of README.md, one thread each, in order.
set -euo pipefail
cd "$(dirname "$0")/../.."
H=experiments/2026-11-25-msd-vote
for args in "0 0.7" "0.5 0.7" "0.5 0.7 extra" "1.0 0.7 extra" "0 0.5"; do
    .venv/bin/python $H/vote.py $args 2>&1 | grep -v Loading
done | tee $H/vote.log
