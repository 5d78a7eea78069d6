"""quality.sh's runs side by side: verify_fold with the n-gram table against without it, per run (greedy GSM8K rows
0-59, greedy chat 20, sampled GSM8K rows 0-59; 256 tokens): answers identical between the arms, tau, answers' KV, and
the table's arm minus the no-table arm, paired by prompt (`paired_bootstrap`, 95%), in worst-token NLL, NLL per token
and rep4 under the base, then each arm's own bands (from its summary.md).

    python experiments/2026-11-27-draft-pricing/quality_summary.py > experiments/2026-11-27-draft-pricing/quality_summary.txt
"""

import json
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).resolve().parent
RUNS = ("greedy-gsm8k60", "greedy-chat20", "sampled-gsm8k60")


def fold_records(folder: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (folder / "examples.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in rows if r["method"].startswith("verify-fold")}


def main() -> None:
    for run in RUNS:
        arms = {arm: HERE / f"eval-{run}-{arm}" for arm in ("none", "table")}
        if not all((folder / "summary.md").is_file() for folder in arms.values()):
            print(f"{run}: not run yet\n")
            continue
        none, table = (fold_records(folder) for folder in arms.values())
        ids = sorted(none)
        same = sum(none[i]["text"] == table[i]["text"] for i in ids)
        print(f"{run}: {len(ids)} prompts, answers identical between the arms: {same}")
        for name, recs in (("no table", none), ("table", table)):
            tokens = sum(recs[i]["tokens"] for i in ids)
            held = sum(recs[i]["kv_slots"] - recs[i]["kv_slots_ordinary"] + recs[i]["tokens"] - 1 for i in ids)
            print(f"  {name:<9} tau {tokens / sum(recs[i]['forwards'] for i in ids):.2f}  answers' KV "
                  f"{held / sum(recs[i]['tokens'] - 1 for i in ids):.3f}")  # (as `hamburger eval` counts it)
        for metric in ("worst_token_nll", "nll_per_token", "rep4"):
            point, lo, hi = paired_bootstrap([table[i][metric] for i in ids], [none[i][metric] for i in ids])
            print(f"  table - no table, {metric:<16} {point:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        for name, folder in arms.items():
            for line in (folder / "summary.md").read_text().splitlines():
                if line.startswith("|") and "| verify-fold" in line:
                    print(f"  {name:<5} {line}")
        print()


if __name__ == "__main__":
    main()
