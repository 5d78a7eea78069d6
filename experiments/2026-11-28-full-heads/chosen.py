"""The full heads: the best-scored (layer, key/value head) pairs of scores.jsonl, as JSON (``HEADS`` of them, 4).

    python experiments/2026-11-28-full-heads/chosen.py [HEADS]
"""

import json
import sys
from pathlib import Path

rows = [json.loads(line) for line in open(Path(__file__).resolve().parent / "scores.jsonl")]
print(json.dumps([[r["layer"], r["kv_head"]] for r in rows if "layer" in r][:int(sys.argv[1]) if sys.argv[1:] else 4]))
