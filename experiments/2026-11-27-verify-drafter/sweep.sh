#!/usr/bin/env bash
# The replay (drafter.py eval) of the model's own MSD and of the trained drafter over the dev answers, at four stop-head
# confidences: tokens per forward, drafts per forward and the modelled ms per token (drafter.py's cost model).
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-verify-drafter
for c in 0.3 0.4 0.5 0.6; do
    for ck in own runs/drafter/k3-lr3e-4/final.safetensors; do
        echo "{\"confidence\": $c, \"drafter\": \"$ck\", \"replay\": $(.venv/bin/python $E/drafter.py eval \
            runs/drafter/dev.pt $([ $ck = own ] || echo $ck) --confidence $c 2>/dev/null)}"
    done
done > $E/replay_sweep.jsonl
