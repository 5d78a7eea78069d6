"""Before/after table of speed.sh's runs: decode tok/s, speed-up over HF `generate` in the same run, tokens per
forward, share of outputs identical to HF `generate`'s, answers' KV (all 16 prompts; then chat and math apart).

    python experiments/2026-11-27-lean-engine/summary.py > experiments/2026-11-27-lean-engine/summary.txt
    python experiments/2026-11-27-lean-engine/summary.py experiments/2026-11-27-draft-pricing  # another folder's runs
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent  # (or another experiment's folder)


def print_runs(paths, header, row) -> None:
    """Each benchmarks/verify_bench.py result in ``paths``: its name and ``header(run)``, then by category (all, chat,
    math) ``row(entry)`` for each method's summary entry."""
    for path in paths:
        run = json.loads(path.read_text())
        print(f"{path.name}: {header(run)}")
        for category in ("all", "chat", "math"):
            print(f"  {category}")
            for s in run["summary"]:
                if s["category"] == category:
                    print(f"    {row(s)}")
        print()


def main() -> None:
    def header(run: dict) -> str:
        m = run["machine"]
        return (f"code at {m['git_commit']}, {m['cpu']}, torch {m['torch']}, {m['threads']} threads, {m['dtype']}, "
                f"env {m['env']}, {run['settings']['max_new_tokens']} new tokens")

    print_runs(sorted(HERE.glob("speed*.json")), header,
               lambda s: f"{s['method']:<60} {s['decode_tok_s']:5.1f} tok/s  {s['speedup_vs_hf']:.2f}x  "
                         f"tau {s['tokens_per_forward']:.2f}  identical {s['identical_to_hf']:.2f}  "
                         f"answers' KV {s['kv_ratio_answer']:.2f}")


if __name__ == "__main__":
    main()
