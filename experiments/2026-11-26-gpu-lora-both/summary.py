"""The README's teacher-forced table: the last eval of lora-both (gpu_run/metrics.jsonl) beside the runs it is judged
against, on the same 300 val rows (49,239 response tokens): its warm start (the v2 continuation, lora-merged step
246), the shipped default model (v2, stage 4 of 2026-11-24) and lora-verify-fold (verify-fold's layout alone). "W16"
is verify-fold's layout at window 16 (every token its own slot, each entropy segment folded into one merged slot 16
tokens after its end); the other columns are HAMburger's own layout.

    python experiments/2026-11-26-gpu-lora-both/summary.py > experiments/2026-11-26-gpu-lora-both/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = {"shipped default model (v2)": HERE.parent / "2026-11-24-gpu-lora-merged/logs/stage4-metrics.jsonl",
        "warm start (v2 continued, lora-merged 246)":
            HERE.parent / "2026-11-25-gpu-v2-two-sets/logs/lora-merged-metrics.jsonl",
        "lora-verify-fold (W16 layout only)": HERE.parent / "2026-11-26-gpu-verify-fold/gpu_run/metrics.jsonl",
        "**lora-both** (both layouts)": HERE / "gpu_run/metrics.jsonl"}


def last_eval(path: Path) -> dict:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("kind") == "eval"][-1]


def pct(x) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def main() -> None:
    print("| run | step | token acc | skip path (micro 1) | micro 2 / 3 / 4 | KL | stop acc | W16 token acc | W16 KL |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, path in RUNS.items():
        r = last_eval(path)
        assert r["tokens"] == 49239, (path, r["tokens"])
        w = r.get("window") or {}
        micro = r["token_acc_micro"]
        w_kl = f"{w['kl']:.3f}" if w else ""
        if "verify-fold" in name:  # trained and evaluated in the W16 layout alone
            print(f"| {name} | {r['step']} | | | | | | {pct(r['token_acc'])} | {r['kl']:.3f} |")
            continue
        print(f"| {name} | {r['step']} | {pct(r['token_acc'])} | {pct(micro[0])} | "
              f"{' / '.join(pct(m) for m in micro[1:])} | {r['kl']:.3f} | {pct(r['stop_acc'])} | "
              f"{pct(w.get('token_acc'))} | {w_kl} |")
    print("\n" + run_facts(HERE / "gpu_run" / "metrics.jsonl"))


def run_facts(path: Path) -> str:
    """Wall time from the run's start line to its end line, response tokens trained, median step speed, peak memory."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    train = [r for r in rows if r.get("kind") == "train"]
    speeds = sorted(r["tok_s"] for r in train)
    wall = rows[-1]["time"] - rows[0]["time"]
    tokens = sum(r["response_tokens"] for r in train)
    return (f"{path.parent.name}: {rows[-1]['step']} steps, {tokens:,} response tokens, "
            f"{wall / 60:.1f} min, median {speeds[len(speeds) // 2] / 1000:.1f}k response tok/s in steps, "
            f"peak {max(r.get('max_mem_gib', 0) for r in train):.1f} GiB")


if __name__ == "__main__":
    main()
