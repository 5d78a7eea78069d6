"""Where each smoke answer (smoke.sh) first differs from the base's greedy answer to the same prompt, in characters."""

import json
from pathlib import Path

HERE = Path(__file__).parent
for arm in ("smoke-q8", "smoke-q4"):
    rows = [json.loads(line) for line in open(HERE / arm / "examples.jsonl")]
    base = {r["id"]: r["text"] for r in rows if r["method"] == "base"}
    for r in rows:
        if r["method"] == "verify-fold":
            a, b = r["text"], base[r["id"]]
            same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"{arm} {r['id']}: {r['tokens']} tokens, {'identical' if a == b else f'first differs at {same}'}"
                  f" (base {len(b)} characters, this {len(a)})")
