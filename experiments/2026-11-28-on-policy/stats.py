"""The figures README.md gives for the on-policy reader's data and run, from committed files: the default model's
sampled answers (answers.jsonl.gz, gen.py's output, with each answer's tau and KV slots) and the run's metrics
(train/metrics.jsonl), as session 44's stats.py reports sr's.

    python experiments/2026-11-28-on-policy/stats.py > experiments/2026-11-28-on-policy/stats.txt
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-28-sampled-reader"))
from stats import answers, answers_line, run_lines  # noqa: E402

rows = answers(HERE / "answers.jsonl.gz")
print(answers_line(rows))
tokens = sum(len(r["response_token_ids"]) + (r["finish_reason"] == "eos") for r in rows)
saved = sum(r["kv_slots_ordinary"] - r["kv_slots"] for r in rows)
print(f"the fold's own answers: tau {sum(r['tau'] for r in rows) / len(rows):.2f} (mean over answers), "
      f"answer slots the fold saved {saved / tokens:.3f} of the answers' tokens")
print("\n".join(run_lines(HERE, "train")))
