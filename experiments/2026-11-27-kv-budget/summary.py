"""The README's tables: the answers' KV at 128 tokens of each fold in kv_look.sh (greedy, 8 chat + 8 GSM8K dev
prompts), then run.sh's budgeted default fold (s45kv65), sampled on long GSM8K dev math (256 tokens, dev rows 0-119),
against the base's sampled answers and paired prompt by prompt with the default fold's decodes of the same prompts and
seeds (s45, ../2026-11-27-growing-first/; `hamburger.eval.paired.paired_bootstrap`, 95%).

    python experiments/2026-11-27-kv-budget/summary.py > experiments/2026-11-27-kv-budget/summary.txt
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
GROWING = HERE.parent / "2026-11-27-growing-first"
_spec = importlib.util.spec_from_file_location("growing_summary", GROWING / "summary.py")
growing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(growing)

PARTS = ("rows0-60", "rows60-120")
ARMS = {"s45 (the default fold)": (GROWING, "s45"), "s45kv65 (the same, budget 0.65)": (HERE, "s45kv65")}


def arm(folder: Path, name: str) -> dict[str, dict[str, dict]] | None:
    """The arm's records over dev rows 0-119 (None unless both runs exist)."""
    merged: dict[str, dict[str, dict]] = {}
    for part in PARTS:
        if not (folder / f"eval-{part}-{name}" / "summary.json").exists():
            return None
        for method, rows in growing.records(folder / f"eval-{part}-{name}").items():
            merged.setdefault(method, {}).update(rows)
    return merged


def main() -> None:
    look = json.loads((HERE / "kv_look_t128.json").read_text())
    print("## The answers' KV at 128 tokens (kv_look.sh: greedy, 8 chat + 8 GSM8K dev prompts)\n")
    print("| fold | chat | math | all | tau (all) |")
    print("|---|---|---|---|---|")
    rows = {(s["method"], s["category"]): s for s in look["summary"]}
    for method in dict.fromkeys(m for m, _ in rows if m.startswith("verify@")):
        kv = [rows[method, c]["kv_ratio_answer"] for c in ("chat", "math", "all")]
        print(f"| `{method.partition('@')[2].partition('@')[2]}` | " + " | ".join(f"{k:.3f}" for k in kv)
              + f" | {rows[method, 'all']['tokens_per_forward']:.2f} |")
    arms = {label: got for label, (folder, name) in ARMS.items() if (got := arm(folder, name)) is not None}
    print("\n## Sampled verify_fold (T 0.7, top-p 0.9), 256 tokens, dev GSM8K rows 0-119\n")
    print("| arm | prompts | tau | answers' KV at their end | answers with a token > 6 nats (base-sampled's) | "
          + " | ".join(f"{m} - base-sampled" for m in growing.METRICS) + " | "
          + " | ".join(f"{m} - s45" for m in growing.METRICS[:2]) + " |")
    print("|---|---|---|---|---|" + "---|" * (len(growing.METRICS) + 2))
    reference = arms[next(iter(ARMS))]["verify-fold-sampled"]
    for label, got in arms.items():
        fold = got["verify-fold-sampled"]
        print(growing.sampled_row(label, got, reference if fold is not reference else None))


if __name__ == "__main__":
    main()
