"""The figures README.md gives for the sampled reader's data and run, from committed files: the base's sampled answers
(sampled.jsonl.gz, train.sh's distill output) and the runs' metrics (train/metrics.jsonl; session 45's arms in
train-fkl/ and train-rkl/, each eval reporting its own KL mix).

    python experiments/2026-11-28-sampled-reader/stats.py > experiments/2026-11-28-sampled-reader/stats.txt
"""

import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIN_TOKENS = 100  # long_rows.py's default, as train.sh runs it

with gzip.open(HERE / "sampled.jsonl.gz", "rt") as f:
    rows = [json.loads(line) for line in f]
lengths = [len(r["response_token_ids"]) for r in rows]
# (long_rows.py counts the segmented rows' response_ids, which hold the EOS id of a complete answer)
long = sum(n + (r["finish_reason"] == "eos") >= MIN_TOKENS for n, r in zip(lengths, rows))
print(f"answers {len(rows)}, mean {sum(lengths) / len(lengths):.1f} tokens, "
      f"stopped at the length limit {sum(r['finish_reason'] == 'length' for r in rows)}, "
      f">= {MIN_TOKENS} response tokens {long}")
for run in ("train", "train-fkl", "train-rkl"):
    metrics = [json.loads(line) for line in (HERE / run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if m.get("kind") != "eval" and "kl" in m]
    print(f"{run}: training steps {len(steps)}, response tokens {sum(m['response_tokens'] for m in steps)}, "
          f"minutes from the first step's end to the last's {(steps[-1]['time'] - steps[0]['time']) / 60:.1f}")
    for m in metrics:
        if m.get("kind") == "eval":
            print(f"{run}: held-out KL (the run's own mix) at step {m['step']}: {m['kl']:.5f}")
