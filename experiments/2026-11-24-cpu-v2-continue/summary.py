"""The numbers this experiment's README and notes quote: steps logged, response tokens, median response tok/s, and
the wall time between the first and last log lines with the longest gap between two (a pause) from one session's
metrics file (default metrics.jsonl, session 13's).

    python experiments/2026-11-24-cpu-v2-continue/summary.py > experiments/2026-11-24-cpu-v2-continue/summary.txt
    python experiments/2026-11-24-cpu-v2-continue/summary.py metrics_session14.jsonl > .../summary_session14.txt
"""

import json
import statistics
import sys
from pathlib import Path

name = sys.argv[1] if len(sys.argv) > 1 else "metrics.jsonl"
rows = [json.loads(line) for line in (Path(__file__).parent / name).read_text().splitlines() if line.strip()]
train = [r for r in rows if r.get("kind") == "train"]
times = [r["time"] for r in train]
gaps = [b - a for a, b in zip(times, times[1:])]
print(f"last step {train[-1]['step']} (epoch index {train[-1]['epoch']}); {len(train)} log lines")
print(f"response tokens {sum(r['response_tokens'] for r in train)}")
print(f"median response tok/s {statistics.median(r['tok_s'] for r in train):.0f}")
print(f"wall minutes first to last log line {(times[-1] - times[0]) / 60:.1f}; longest gap {max(gaps) / 60:.1f}")
evals = [r for r in rows if r.get("kind") == "eval"]
for r in evals:
    print(f"eval step {r['step']}: token_acc {r.get('token_acc')}, micro {r.get('token_acc_micro')}")
