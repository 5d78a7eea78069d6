#!/usr/bin/env bash
# Which decoding mode should `hamburger serve` run by default? Throughput and latency of the bundled model's two
# lossless modes (hamburger at its knob 1.0: the base's own decoding; verify: drafts checked by the base) under load:
# 16 chat/GSM8K dev prompts sent at once (benchmarks/load_test.py --prompts dev), 128 new tokens, greedy, at server
# batch sizes 1, 2, 4 and 8 (continuous batching: the queue refills each batch), 2 threads, fp32, MKL_CBWR=AVX2.
# Run on a quiet machine (pause CPU training first). Records: results/serve-modes/MODE-bBATCH.json; verify with
# `--draft-rows 3` (drafting only in forwards of up to 3 rows) at batch 4 and 8: verify-d3-bBATCH.json.
set -euo pipefail
cd "$(dirname "$0")/.."
export MKL_CBWR=AVX2
D=benchmarks/results/serve-modes
mkdir -p $D
run() {  # NAME BATCH ARGS...: one load test unless its record exists
    local name=$1 b=$2
    shift 2
    [ -s $D/$name-b$b.json ] || .venv/bin/python benchmarks/load_test.py --model default --prompts dev --clients 16 \
        --max-batch-size $b --max-tokens 128 "$@" --out $D/$name-b$b.json > $D/$name-b$b.log 2>&1
}
for b in ${BATCHES:-1 2 4 8}; do
    run hamburger $b --mode hamburger
    run verify $b --mode verify
done
for b in 4 8; do run verify-d3 $b --mode verify --draft-rows 3; done
.venv/bin/python - > $D/summary.md <<'PY'
import json
from pathlib import Path
D = Path("benchmarks/results/serve-modes")
print("| server batch | mode | completion tok/s | vs hamburger | mean tau | latency p50 s "
      "| time to first chunk p50 s |")
print("|---|---|---|---|---|---|---|")
for b in (1, 2, 4, 8):
    runs = {m: json.loads((D / f"{m}-b{b}.json").read_text())["results"] for m in ("hamburger", "verify", "verify-d3")
            if (D / f"{m}-b{b}.json").exists()}
    for m, r in runs.items():
        print(f"| {b} | {m} | {r['tokens_per_s']} | {r['tokens_per_s'] / runs['hamburger']['tokens_per_s']:.2f}x | "
              f"{r['mean_tau']} | {r['latency_s_p50']} | {r['ttft_s_p50']} |")
PY
