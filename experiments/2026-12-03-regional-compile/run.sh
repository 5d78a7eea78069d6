#!/usr/bin/env bash
# Cold compile time and step speed of the training forward compiled whole (`stack`) or layer by layer (`layer`),
# against uncompiled (`eager`): SmolLM2-135M, full fine-tune + KL with configs/smollm2-gpu-full-fast.yaml's settings,
# 4 rows per step, 3 warm-up steps (they compile) and 3 timed ones, 2 threads, each run a fresh process with an empty
# inductor cache. Appends to results.jsonl (README.md has the rule). Usage: bash run.sh [ARMS]
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-03-regional-compile
export HF_HUB_OFFLINE=1
for arm in ${ARMS:-stack layer eager layer stack eager}; do
    cache=$(mktemp -d)
    compile=(--compile --compile-region "$arm")
    [ "$arm" = eager ] && compile=()
    echo "== $arm $(date -u +%H:%M:%S)"
    TORCHINDUCTOR_CACHE_DIR="$cache" .venv/bin/python benchmarks/train_throughput.py \
        --data data/segmented/smollm2-135m-instruct.train.jsonl --config configs/smollm2-gpu-full-fast.yaml \
        --modes full+kl --batch-size 4 --warmup 3 --steps 3 --threads 2 "${compile[@]}" \
        --out "$HERE/results.jsonl" 2>&1 | grep -v '^DEBUG' | tail -3
    rm -rf "$cache"
done
