#!/usr/bin/env bash
# Training speed of the gated-LoRA CPU line (configs/smollm2-lora-merged-more-cpu.yaml: LoRA at merged slots, KL 0.5,
# bf16, batch 8, loss_chunk 512, 2 threads) with and without running frozen prompts once, and before and after
# frozen linears are stored in bf16. Every setting in its own process, alternating, ROUNDS times; anything else on
# the machine paused. Usage: bash run.sh BEFORE_CHECKOUT [ROUNDS]
#   BEFORE_CHECKOUT: a worktree of commit c15cf00 (prompt reuse, autocast re-casting frozen weights):
#   git worktree add ../hamburger-c15cf00 c15cf00
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BEFORE=$(cd "$1" && pwd)
ROUNDS=${2:-2}
OUT=$ROOT/benchmarks/results/train-throughput-prompt-once/fresh_processes.jsonl
[ -s "$ROOT/runs/cpu/more-split/train.jsonl" ] || bash "$ROOT/experiments/2026-11-24-lora-more/run.sh" --data-only
bench() {  # CHECKOUT REUSE_PROMPT
    (cd "$1" && PYTHONPATH="$1" MKL_CBWR=AVX2 "$ROOT/.venv/bin/python" benchmarks/train_throughput.py \
        --data "$ROOT/runs/cpu/more-split/train.jsonl" --config "$ROOT/configs/smollm2-lora-merged-more-cpu.yaml" \
        --modes lora-merged+kl --reuse-prompt "$2" --steps 4 --warmup 1 --threads 2 \
        --set init="$ROOT/experiments/2026-11-24-lora-fresh/warm_start" --out "$OUT")
}
for _ in $(seq "$ROUNDS"); do
    bench "$BEFORE" no; bench "$BEFORE" yes; bench "$ROOT" yes; bench "$ROOT" no
done
