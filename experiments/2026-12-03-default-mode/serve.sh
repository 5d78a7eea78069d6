#!/usr/bin/env bash
# Check 3 (serve's default): `benchmarks/load_test.py` as `benchmarks/serve_modes.sh` runs it (16 chat and GSM8K dev
# prompts sent at once, 128 new tokens, greedy, 2 threads, fp32), lossless verify and verify_fold (its default fold)
# at server batch sizes 1, 2, 4 and 8, each with the server's defaults (`--draft-rows` 3 on a CPU), interleaved by batch
# size. Run it alone on the machine (each record skipped when done):
#   bash experiments/2026-12-03-default-mode/serve.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2
# REP=2: a second repetition after the rule was read (reported only), verify_fold first at each batch size, in serve-2/
D=${OUT:-experiments/2026-12-03-default-mode/serve${REP:+-$REP}}  # (OUT: another folder, as ../2026-12-03-store-speed/ runs it)
MODES="verify verify_fold"
[ -n "${REP:-}" ] && MODES="verify_fold verify"
mkdir -p $D
for b in 1 2 4 8; do
    for mode in $MODES; do
        [ -s $D/$mode-b$b.json ] || .venv/bin/python benchmarks/load_test.py --model default --prompts dev \
            --clients 16 --max-batch-size $b --max-tokens 128 --mode $mode --out $D/$mode-b$b.json \
            > $D/$mode-b$b.log 2>&1
    done
done
