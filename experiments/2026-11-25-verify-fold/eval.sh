#!/usr/bin/env bash
# Issue 19: the quality suite on verify mode with folding (FOLD, default segments:16; drafting always: stop head at
# 0.01), the GPU warm start, paired with the base by `hamburger eval`'s bands:
#   dev: the knob rule's prompts (20 chat + 20 GSM8K dev prompts, 96 new tokens; `hamburger calibrate`'s protocol);
#   test (report only, nothing chosen on it; only with IFEVAL=1): the first 60 IFEval prompts, 128 new tokens (the
#   protocol of benchmarks/results/quality-2026-11-23-calibration/).
# Outputs: eval-dev-GROUPS-WINDOW/, eval-ifeval-GROUPS-WINDOW/ and their .txt logs. Steps are skipped when their output
# exists. One thread each (THREADS to change).
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-25-verify-fold
W=experiments/2026-11-25-gpu-v2-two-sets/warm_start
FOLD=${FOLD:-segments:16}
NAME=${FOLD/:/-}
export MKL_CBWR=AVX2
common=(--model $W --verify-fold $FOLD --verify-confidence 0.01 --confidence "" --batch-size 8 --threads ${THREADS:-1})
[ -s $E/eval-dev-$NAME/summary.json ] || .venv/bin/hamburger eval "${common[@]}" --tasks chat,gsm8k --limit 20 \
    --max-new-tokens 96 --out $E/eval-dev-$NAME > $E/eval-dev-$NAME.txt 2>&1
[ -z "${IFEVAL:-}" ] || [ -s $E/eval-ifeval-$NAME/summary.json ] || .venv/bin/hamburger eval "${common[@]}" \
    --tasks ifeval --limit 60 --max-new-tokens 128 --out $E/eval-ifeval-$NAME > $E/eval-ifeval-$NAME.txt 2>&1
