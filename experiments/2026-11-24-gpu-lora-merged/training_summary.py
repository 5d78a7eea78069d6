"""The numbers this experiment's README and the model card quote about training: per GPU stage (steps, response
tokens, wall minutes, median response tok/s, peak GPU memory) from logs/stage*-metrics.jsonl, and the response
tokens of the CPU links of the line that v2 continues (each link's metrics up to the step the next link started from).

    python experiments/2026-11-24-gpu-lora-merged/training_summary.py > experiments/2026-11-24-gpu-lora-merged/training_summary.txt
"""

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
EXPERIMENTS = HERE.parent
# (metrics file, last step the next link started from; None = all)
CPU_LINKS = [("2026-11-23-msd-chains/metrics.jsonl", 466), ("2026-11-23-lora-merged/metrics.jsonl", 200),
             ("2026-11-23-lora-recut/metrics.jsonl", 528), ("2026-11-24-lora-fresh/metrics_lora-fresh.jsonl", 436),
             ("2026-11-24-lora-more/metrics.jsonl", 831)]


def train_lines(path: Path, last_step: int | None = None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("kind") == "train" and (last_step is None or r["step"] <= last_step)]


def main() -> None:
    total_tokens = total_seconds = 0
    for stage in sorted(HERE.glob("logs/stage*-metrics.jsonl")):
        rows = [json.loads(line) for line in stage.read_text().splitlines() if line.strip()]
        train = [r for r in rows if r.get("kind") == "train"]
        tokens, seconds = sum(r["tokens"] for r in train), rows[-1]["time"] - rows[0]["time"]
        total_tokens, total_seconds = total_tokens + tokens, total_seconds + seconds
        print(f"{stage.name}: {train[-1]['step']} steps, {tokens:,} response tokens logged, {seconds / 60:.1f} min, "
              f"median {statistics.median(r['tok_s'] for r in train):,.0f} tok/s, "
              f"peak {max(r.get('max_mem_gib', 0) for r in train):.1f} GiB")
    print(f"GPU total: {total_tokens:,} response tokens in {total_seconds / 60:.1f} min")
    cpu = 0
    for name, last in CPU_LINKS:
        path = EXPERIMENTS / name
        if not path.is_file():
            print(f"{name}: missing")
            continue
        tokens = sum(r["tokens"] for r in train_lines(path, last))
        cpu += tokens
        print(f"CPU link {name} (to step {last}): {tokens:,} response tokens logged")
    print(f"CPU total: {cpu:,} response tokens; GPU / CPU = {total_tokens / cpu:.1f}")


if __name__ == "__main__":
    main()
