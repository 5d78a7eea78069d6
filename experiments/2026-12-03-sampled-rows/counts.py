"""Rows, distinct ids and response tokens of every committed sampled draw (session 67):
    ../../.venv/bin/python counts.py > counts.md
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

DISTILLED = Path(__file__).resolve().parents[2] / "data/distilled"

if __name__ == "__main__":
    print("| draw | rows | distinct ids | response tokens |")
    print("|---|---|---|---|")
    for path in sorted(DISTILLED.glob("*-s*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            rows = [json.loads(line) for line in f]
        tokens = sum(len(r["response_token_ids"]) for r in rows)
        print(f"| {path.name} | {len(rows):,} | {len({r['id'] for r in rows}):,} | {tokens:,} |")
