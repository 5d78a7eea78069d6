#!/usr/bin/env bash
# After check 3 (reported only, decides nothing): batched `hamburger generate --prompts-file`, whose default mode is now
# verify_fold, against lossless verify: the 16 dev prompts of check 3 (`load_test.prompts(16, "dev")`), 128 new tokens,
# greedy, --batch-size 8, 2 threads, fp32; wall seconds of the whole command (model load included) and the tokens
# written, three repetitions taking turns (verify, verify_fold, verify, ...), the median kept. (Its first version ran
# each mode once: `batched/summary-once.txt`.) Run it alone on the machine (skipped when done):
#   bash experiments/2026-12-03-default-mode/batched.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export MKL_CBWR=AVX2 HF_HUB_OFFLINE=1
D=experiments/2026-12-03-default-mode/batched
mkdir -p $D
[ -s $D/prompts.jsonl ] || .venv/bin/python -c "
import json, sys
sys.path.insert(0, '.')
from benchmarks.load_test import prompts
for p in prompts(16, 'dev'):
    print(json.dumps({'prompt': p}))" > $D/prompts.jsonl
for rep in 1 2 3; do
    for mode in verify verify_fold; do
        [ -s $D/$mode-$rep.wall ] && continue
        start=$(date +%s.%N)
        .venv/bin/hamburger generate --prompts-file $D/prompts.jsonl --batch-size 8 --max-new-tokens 128 \
            --threads 2 --mode $mode > $D/$mode.jsonl 2> $D/$mode.log
        echo "$(date +%s.%N) - $start" | bc > $D/$mode-$rep.wall
    done
done
.venv/bin/python - <<'PY'
import json
from pathlib import Path
D = Path("experiments/2026-12-03-default-mode/batched")
for mode in ("verify", "verify_fold"):
    rows = [json.loads(line) for line in (D / f"{mode}.jsonl").read_text().splitlines()]
    walls = sorted(float((D / f"{mode}-{rep}.wall").read_text()) for rep in (1, 2, 3))
    wall, tokens = walls[1], sum(r["tokens"] for r in rows)
    kv = sum(r["kv_slots"] for r in rows) / sum(r["kv_slots_ordinary"] for r in rows)
    print(f"{mode}: {len(rows)} answers, {tokens} tokens, {wall:.1f} s wall (median; {walls[0]:.1f}-{walls[2]:.1f}), "
          f"{tokens / wall:.1f} tok/s "
          f"(model load included), tau {tokens / sum(r['forwards'] for r in rows):.2f}, whole cache {kv:.3f}")
PY
