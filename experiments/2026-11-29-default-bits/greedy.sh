#!/usr/bin/env bash
# Greedy verify_fold with the candidate fold, 96 tokens, the base's answers reused; each into its folder, skipped
# when done.
#   bash experiments/2026-11-29-default-bits/greedy.sh       # check 1 of README: the default model's calibration
#                                                             # prompts (20 chat + 20 GSM8K dev prompts), the base's
#                                                             # answers from the shipped default's run -> greedy-q4
#   bash experiments/2026-11-29-default-bits/greedy.sh 240   # README's added report: the first 120 chat and 120 GSM8K
#                                                             # dev prompts, the base's answers from session 40's run
#                                                             # on them -> greedy240-q4
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-29-default-bits
export MKL_CBWR=AVX2  # as the reused runs
case "${1:-}" in
  240) out=greedy240-q4 limit=120 base=experiments/2026-11-27-keep-fold-full/eval-t96-l120-s45 ;;
  *) out=greedy-q4 limit=20 base=experiments/2026-11-28-full-head-cache/greedy-fh4 ;;
esac
[ -s $E/$out/summary.json ] || nice -n 10 .venv/bin/hamburger eval --tasks chat,gsm8k --limit $limit \
    --max-new-tokens 96 --confidence "" --batch-size 8 --threads 2 \
    --verify-fold segments:60:0.45:none:bits=4 --verify-confidence 0.3 --verify-lookup 10 \
    --reuse-base $base --out $E/$out > $E/$out.txt 2>&1
