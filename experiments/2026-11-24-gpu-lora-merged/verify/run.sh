#!/usr/bin/env bash
# Verify mode (lossless) with the GPU model's micro-step decoder as the draft head, against the draft head of the
# earlier draft-focused run (experiments/2026-11-23-msd-chains/warm_start), same prompts and settings. The outputs
# are the base's greedy answers either way; what changes is tokens per base forward and speed. 2 threads, quiet CPU.
set -euo pipefail
cd "$(dirname "$0")/../../.."
V=experiments/2026-11-24-gpu-lora-merged/verify
PY=${PY:-.venv/bin/python}
for m in experiments/2026-11-24-gpu-lora-merged/warm_start:gpu experiments/2026-11-23-msd-chains/warm_start:msd_chains; do
    [ -s $V/${m#*:}.json ] || MKL_CBWR=AVX2 $PY -m benchmarks.verify_bench --model ${m%%:*} --n-chat 8 --n-math 8 \
        --max-new-tokens 96 --policies c0.5,k2 --threads 2 --skip-costs --out $V/${m#*:}.json
done
