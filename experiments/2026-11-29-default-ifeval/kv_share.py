"""The answers' KV of eval-fh4-n541 (eval's `answer_kv_share`: the answers' slots, whole-slot equivalents, over one
per answer token but the last, pooled over answers), over all answers and over those that ran to the 128-token budget.

    python experiments/2026-11-29-default-ifeval/kv_share.py > experiments/2026-11-29-default-ifeval/kv_share.txt
"""

import json
from pathlib import Path

rows = [json.loads(line) for line in (Path(__file__).resolve().parent / "eval-fh4-n541/examples.jsonl").open()]
fold = [r for r in rows if r["method"] == "verify-fold"]
for label, some in (("all answers", fold), ("answers of 128 tokens", [r for r in fold if r["tokens"] >= 128])):
    share = sum(r["kv_slots"] - r["kv_slots_ordinary"] + r["tokens"] - 1 for r in some) / \
        sum(r["tokens"] - 1 for r in some)
    print(f"{label}: {len(some)} answers, mean {sum(r['tokens'] for r in some) / len(some):.1f} tokens, "
          f"answers' KV {share:.3f}")
