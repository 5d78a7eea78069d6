#!/usr/bin/env bash
# The quality suite on the shipped default model vs its base, as run on 2026-11-23: IFEval (a test set, reported
# only) and the dev chat prompts (what `hamburger calibrate` uses), a small subset on a shared 2-core CPU under
# heavy load (load average 8-12), so few prompts and 40 new tokens.
set -u
cd "$(dirname "$0")/../../.."
R=benchmarks/results/quality-2026-11-23
nice -n 5 hamburger eval --tasks ifeval --limit 10 --max-new-tokens 40 --confidence 0.7,0.9 \
    --batch-size 10 --threads 2 --out $R/ifeval
nice -n 5 hamburger eval --tasks chat --limit 8 --max-new-tokens 40 --confidence 0.7,0.9 \
    --batch-size 8 --threads 2 --out $R/dev-chat
hamburger calibrate --model hamburger/default_model --tasks chat --results $R/dev-chat --dry-run
