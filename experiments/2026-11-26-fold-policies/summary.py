"""The README's tables from reading*.json (`reading.py`'s raw counts): per model and fold policy, over the 80 answers
(20 chat + 20 GSM8K dev prompts, the base's greedy and sampled 256-token answers) and GSM8K's 40 alone.

    python experiments/2026-11-26-fold-policies/summary.py > experiments/2026-11-26-fold-policies/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def total(stats: dict, keys: list[str]) -> dict:
    return {k: sum(stats[a].get(k, 0) for a in keys)
            for k in ("positions", "flips", "spikes", "kl", "tokens", "slots", "slots_128", "answers_128")}


def kv_128(total: dict) -> str:
    """The answers' KV when 128 of their tokens are cached, over the answers longer than that (newer readings only)."""
    return f"{total['slots_128'] / (128 * total['answers_128']):.3f}" if total["answers_128"] else ""


def main() -> None:
    for path in sorted(HERE.glob("reading*.json")):
        model = path.stem.removeprefix("reading").removeprefix("-") or "the default model"
        print(f"\n## {model}\n")
        print("| policy | flip % (all 80) | spikes > 6 nats (all) | KL mean (all) | answers' KV (all) "
              "| flip % (GSM8K 40) | spikes (GSM8K) | KV (GSM8K) | KV (chat) | KV at 128 (all) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for policy, stats in json.loads(path.read_text()).items():
            every = total(stats, list(stats))
            math = total(stats, [a for a in stats if a.startswith("gsm8k")])
            chat = total(stats, [a for a in stats if a.startswith("chat")])
            print(f"| {policy} | {100 * every['flips'] / every['positions']:.2f} | {every['spikes']} | "
                  f"{every['kl'] / every['positions']:.4f} | {every['slots'] / every['tokens']:.3f} | "
                  f"{100 * math['flips'] / math['positions']:.2f} | {math['spikes']} | "
                  f"{math['slots'] / math['tokens']:.3f} | {chat['slots'] / chat['tokens']:.3f} | {kv_128(every)} |")


if __name__ == "__main__":
    main()
