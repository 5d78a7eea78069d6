#!/usr/bin/env bash
# After the verdict: the new default as the library now reads it (the whole cache turned, so no read turns the store
# back) timed by `hamburger bench --folds` beside HF `generate`, the old default (READER_FOLD, with the default model's
# fold reader and full heads, as check 3's "shipped verify_fold") and session 53's 4-bit store: greedy, batch 1, 2
# prompts per bench category, 256 tokens, 3 repetitions interleaved (check 3's protocol), on a machine left quiet;
# into bench-after/ (it resumes from its log when killed).
#   bash experiments/2026-11-29-rotated-store/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2  # as check 3
.venv/bin/hamburger bench --methods hf_generate,verify_fold --n-prompts 2 --max-new-tokens 256 --repeats 3 \
    --lengths "" --batch-sizes "" --threads 2 \
    --folds segments:60:0.45:first:steps=8:p=0.7,segments:60:0.45:none:bits=8/4:rotate,segments:60:0.45:none:bits=4 \
    --out experiments/2026-11-29-rotated-store/bench-after > experiments/2026-11-29-rotated-store/bench-after.txt 2>&1
