"""The load tests' table: completion tokens/s, against mode hamburger (the base's own decoding) at the same server
batch, mean tau, latency and time to first chunk (p50), for every record under OFFSET folders here.

    python experiments/2026-11-27-draft-rows/summary.py > experiments/2026-11-27-draft-rows/summary.md
"""

import json
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    for folder in sorted(HERE.glob("offset*")):
        runs = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
        machine = next(iter(runs.values()))["machine"]
        print(f"## {folder.name}: {machine['cpu']}, torch {machine['torch']}, {machine['threads']} threads, "
              f"{machine['dtype']}, env {machine['env']}, code at {machine['git_commit']}\n")
        print("| server batch | run | completion tok/s | vs hamburger | mean tau | latency p50 s | first chunk p50 s |")
        print("|---|---|---|---|---|---|---|")
        for name, run in sorted(runs.items(), key=lambda kv: (int(kv[0].rsplit("-b", 1)[1]), kv[0])):
            r = run["results"]
            plain = runs[f"hamburger-b{r['max_batch_size']}"]["results"]["tokens_per_s"]
            print(f"| {r['max_batch_size']} | {name.rsplit('-b', 1)[0]} | {r['tokens_per_s']} | "
                  f"{r['tokens_per_s'] / plain:.2f}x | {r['mean_tau']} | {r['latency_s_p50']} | {r['ttft_s_p50']} |")
        print()


if __name__ == "__main__":
    main()
