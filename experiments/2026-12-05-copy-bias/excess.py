"""Where the default model's excess repetition sits in its committed GSM8K decodes (README.md):
    ../../.venv/bin/python excess.py > excess.md
Per arm at knob 0.9 (120 dev prompts, 96 tokens, `../2026-12-03-default-knob-fold/`): rep4 minus the base's greedy
answer's, per prompt; its spread; and its sum split by whether each of the pair ended before the 96-token limit.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

EARLIER = Path(__file__).resolve().parent.parent / "2026-12-03-default-knob-fold"
ARMS = {"fold-tail 2 (the judge's layout)": EARLIER / "calibration", "single-tail 3 (no merged slot)":
        EARLIER / "single-tail"}
METHOD, LIMIT = "hamburger@0.9", 96


def answers(folder: Path, method: str) -> dict[str, dict]:
    rows = (json.loads(line) for line in (folder / "examples.jsonl").open())
    return {r["id"]: r for r in rows if r["task"] == "gsm8k" and r["method"] == method}


def main() -> None:
    base = answers(EARLIER / "calibration", "base")
    print(f"GSM8K, knob 0.9, {LIMIT} tokens: rep4 of each arm's answer minus the base's greedy answer's, per prompt.\n")
    for name, folder in ARMS.items():
        arm = answers(folder, METHOD)
        diffs = sorted(arm[i]["rep4"] - base[i]["rep4"] for i in arm)
        n = len(diffs)
        quantile = {q: diffs[round(q * (n - 1))] for q in (0.1, 0.25, 0.5, 0.75, 0.9)}
        print(f"## {name}\n- {n} prompts, mean difference {sum(diffs) / n:+.3f} (sum {sum(diffs):+.2f}); higher in "
              f"{sum(d > 0 for d in diffs)}, lower in {sum(d < 0 for d in diffs)}, equal in {sum(d == 0 for d in diffs)}")
        print("- quantiles 10/25/50/75/90%: " + ", ".join(f"{v:+.3f}" for v in quantile.values()))
        split = defaultdict(list)
        for i in arm:
            split[base[i]["tokens"] < LIMIT, arm[i]["tokens"] < LIMIT].append(arm[i]["rep4"] - base[i]["rep4"])
        print("\n| base ended early | arm ended early | prompts | mean difference | sum |\n|---|---|---|---|---|")
        for (b, a), v in sorted(split.items()):
            print(f"| {b} | {a} | {len(v)} | {sum(v) / len(v):+.3f} | {sum(v):+.2f} |")
        print()


if __name__ == "__main__":
    main()
