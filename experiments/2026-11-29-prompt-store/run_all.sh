#!/usr/bin/env bash
# The README's checks in order, each skipped when done: speed (on a machine left quiet), greedy, IFEval, sampled chat.
#   bash experiments/2026-11-29-prompt-store/run_all.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-prompt-store
export MKL_CBWR=AVX2
[ -s $E/speed.json ] || { .venv/bin/python $E/speed.py > $E/speed.json.part 2> $E/speed.log && mv $E/speed.json.part $E/speed.json; }
bash $E/greedy.sh
bash $E/ifeval.sh
bash $E/chat.sh
