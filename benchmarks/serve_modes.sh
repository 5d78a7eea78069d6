#!/usr/bin/env bash
# Which decoding mode should `hamburger serve` run by default? Throughput and latency of the bundled model's three
# modes under load, each with the server's defaults: hamburger at its knob 1.0 (the base's own decoding), lossless
# verify (drafts checked by the base, drafting only in forwards of up to 3 rows on a CPU) and verify_fold (verify on
# a cache that stores older tokens at 8/4 bits). 16 chat/GSM8K dev prompts sent at once (benchmarks/load_test.py
# --prompts dev), 128 new tokens, greedy, at server batch sizes 1, 2, 4 and 8 (continuous batching: the queue refills
# each batch), 2 threads, fp32, MKL_CBWR=AVX2. Three repetitions, the modes' order turning by one each repetition;
# the summary takes medians (one run here moves by 10-50%). Run it alone on a quiet machine; rerun to resume (a
# record that exists is skipped). Records: $OUT/rREP/MODE-bBATCH.json (default OUT
# benchmarks/results/serve-modes-medians); summary: $OUT/summary.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export MKL_CBWR=AVX2
D=${OUT:-benchmarks/results/serve-modes-medians}
MODES=(hamburger verify verify_fold)
for rep in 1 2 3; do
    mkdir -p $D/r$rep
    for b in ${BATCHES:-1 2 4 8}; do
        for k in 0 1 2; do
            mode=${MODES[$(( (k + rep - 1) % 3 ))]}
            out=$D/r$rep/$mode-b$b
            [ -s $out.json ] || .venv/bin/python benchmarks/load_test.py --model default --prompts dev --clients 16 \
                --max-batch-size $b --max-tokens 128 --mode $mode --out $out.json > $out.log 2>&1
        done
    done
done
.venv/bin/python - "$D" > $D/summary.md <<'PY'
import json
import statistics
import sys
from pathlib import Path

D = Path(sys.argv[1])
runs = {}  # (mode, batch) -> results of each repetition
for path in sorted(D.glob("r*/*.json")):
    r = json.loads(path.read_text())["results"]
    runs.setdefault((r["mode"], r["max_batch_size"]), []).append(r)
print("Medians over repetitions (each repetition's completion tok/s in brackets)\n")
print("| server batch | mode | completion tok/s | vs hamburger | vs verify | mean tau | latency p50 s "
      "| time to first chunk p50 s |")
print("|---|---|---|---|---|---|---|---|")
median = lambda rs, key: statistics.median(r[key] for r in rs)
for b in sorted({b for _, b in runs}):
    ref = {m: median(runs[m, b], "tokens_per_s") for m in ("hamburger", "verify") if (m, b) in runs}
    for m in ("hamburger", "verify", "verify_fold"):
        if (m, b) not in runs:
            continue
        rs, tps = runs[m, b], median(runs[m, b], "tokens_per_s")
        vs = [f"{tps / ref[n]:.3f}x" if n in ref else "" for n in ("hamburger", "verify")]
        print(f"| {b} | {m} | {tps:.1f} {[r['tokens_per_s'] for r in rs]} | {vs[0]} | {vs[1]} | "
              f"{median(rs, 'mean_tau'):.3f} | {median(rs, 'latency_s_p50'):.1f} | {median(rs, 'ttft_s_p50'):.1f} |")
print("\nCompletion tokens per run:", sorted({r["completion_tokens"] for rs in runs.values() for r in rs}))
PY
