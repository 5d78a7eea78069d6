"""The figures README.md gives for the sampled reader's data and run, from committed files: the base's sampled answers
(sampled.jsonl.gz, train.sh's distill output) and the runs' metrics (train/metrics.jsonl; session 45's arms in
train-fkl/ and train-rkl/, each eval reporting its own KL mix). Session 47's on-policy run reports the same way
(../2026-11-28-on-policy/stats.py).

    python experiments/2026-11-28-sampled-reader/stats.py > experiments/2026-11-28-sampled-reader/stats.txt
"""

import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIN_TOKENS = 100  # long_rows.py's default, as train.sh runs it


def answers(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def answers_line(rows: list[dict]) -> str:
    lengths = [len(r["response_token_ids"]) for r in rows]
    # (long_rows.py counts the segmented rows' response_ids, which hold the EOS id of a complete answer)
    long = sum(n + (r["finish_reason"] == "eos") >= MIN_TOKENS for n, r in zip(lengths, rows))
    return (f"answers {len(rows)}, mean {sum(lengths) / len(lengths):.1f} tokens, "
            f"stopped at the length limit {sum(r['finish_reason'] == 'length' for r in rows)}, "
            f">= {MIN_TOKENS} response tokens {long}")


def run_lines(folder: Path, run: str) -> list[str]:
    metrics = [json.loads(line) for line in (folder / run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if m.get("kind") != "eval" and "kl" in m]
    return [f"{run}: training steps {len(steps)}, response tokens {sum(m['response_tokens'] for m in steps)}, "
            f"minutes from the first step's end to the last's {(steps[-1]['time'] - steps[0]['time']) / 60:.1f}"] + \
        [f"{run}: held-out KL (the run's own mix) at step {m['step']}: {m['kl']:.5f}"
         for m in metrics if m.get("kind") == "eval"]


if __name__ == "__main__":
    print(answers_line(answers(HERE / "sampled.jsonl.gz")))
    for run in ("train", "train-fkl", "train-rkl"):
        print("\n".join(run_lines(HERE, run)))
