#!/usr/bin/env bash
# Every in-run eval of the two continuations of the line's warm start (same data, same 300 val rows, same steps).
cd "$(dirname "$0")/../.."
python3 experiments/2026-11-25-gpu-full/summary.py \
    "lora-two-sets (merged_and_after)=experiments/2026-11-25-gpu-v2-two-sets/logs/lora-two-sets-metrics.jsonl" \
    "lora-merged (control)=experiments/2026-11-25-gpu-v2-two-sets/logs/lora-merged-metrics.jsonl"
