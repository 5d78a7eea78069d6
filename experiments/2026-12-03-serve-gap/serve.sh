#!/usr/bin/env bash
# Stage 2 (README.md): session 56's check 3 (`../2026-12-03-default-mode/serve.sh`: load_test, 16 dev prompts, 128
# tokens, verify and verify_fold at server batch 1, 2, 4, 8), three repetitions, verify_fold first in the second.
# Run it alone on the machine (each record skipped when done):
#   bash experiments/2026-12-03-serve-gap/serve.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
for rep in 1 2 3; do
    if [ $rep -eq 2 ]; then
        OUT=experiments/2026-12-03-serve-gap/serve-$rep REP=2 bash experiments/2026-12-03-default-mode/serve.sh
    else
        OUT=experiments/2026-12-03-serve-gap/serve-$rep bash experiments/2026-12-03-default-mode/serve.sh
    fi
done
