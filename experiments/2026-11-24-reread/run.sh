#!/usr/bin/env bash
# Re-read on doubt (DecodingConfig.reread) on the gated-LoRA line's best model (lora-more step 831): the decode curve
# on the 48 dev prompts of experiments/2026-11-24-lora-more (16 per category, 96 tokens, token_prob gate), at knobs
# 0.9 / 0.7 / 0.5, each without re-reading (0), at thresholds 0.3 and 0.6, and re-reading every merged group (1.0).
# Usage: bash experiments/2026-11-24-reread/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
export MKL_CBWR=AVX2
nice -n 1 $PY benchmarks/decode_fidelity.py --models experiments/2026-11-24-lora-more/warm_start --gates token_prob \
    --confidence 0.9,0.7,0.5 --reread 0,0.3,0.6,1.0 --per-category 16 --threads 2 \
    --out experiments/2026-11-24-reread/decode_fidelity.json
