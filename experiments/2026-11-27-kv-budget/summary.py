"""The README's tables: the answers' KV at 128 tokens of each fold in kv_look.sh (greedy, 8 chat + 8 GSM8K dev
prompts), then run.sh's budgeted default fold (s45kv65) and eviction control (n56), sampled on long GSM8K dev math
(256 tokens, dev rows 0-119), against the base's sampled answers and paired prompt by prompt with the default fold
decoded again by this session's engine (s45now; session 33's decodes of it, ../2026-11-27-growing-first/, as a row of
their own; `hamburger.eval.paired.paired_bootstrap`, 95%); s45 decoded again on rows 120-239 and greedy on rows 0-59
against session 33's; then the check of plain sampling (eval-rows0-60-fresh-base: the
base's and lossless verify's sampled answers decoded again, against the base-sampled answers every arm is held to).

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
# The first arm is every other's reference: s45 decoded again by this session's engine (s45now); session 33's s45
# decodes of the same prompts and seeds, by the engine of then, follow as a row of their own (README: they differ).
ARMS = {"s45now (the default fold, decoded again here)": (HERE, "s45now"),
        "s45kv65 (the same, budget 0.65)": (HERE, "s45kv65"),
        "n56 (groups evicted, keep none, budget 0.56)": (HERE, "n56"),
        "s45 as session 33 decoded it": (GROWING, "s45")}


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
          + " | ".join(f"{m} - s45now" for m in growing.METRICS[:2]) + " |")
    print("|---|---|---|---|---|" + "---|" * (len(growing.METRICS) + 2))
    reference = arms[next(iter(ARMS))]["verify-fold-sampled"]
    for label, got in arms.items():
        fold = got["verify-fold-sampled"]
        print(growing.sampled_row(label, got, reference if fold is not reference else None))
    decoded_again()
    sampling_check()


def decoded_again() -> None:
    """s45 on dev rows 120-239 by this session's engine against session 33's decodes; greedy rows 0-59 likewise."""
    now = growing.records(HERE / "eval-rows120-240-s45now")
    then = growing.records(GROWING / "eval-rows120-240-s45")
    print("\n## s45 decoded again, dev rows 120-239 (sampled, 256 tokens)\n")
    print("| arm | prompts | tau | answers' KV at their end | answers with a token > 6 nats (base-sampled's) | "
          + " | ".join(f"{m} - base-sampled" for m in growing.METRICS) + " | "
          + " | ".join(f"{m} - the first row" for m in growing.METRICS[:2]) + " |")
    print("|---|---|---|---|---|" + "---|" * (len(growing.METRICS) + 2))
    print(growing.sampled_row("this session's engine", now, None))
    print(growing.sampled_row("session 33's engine", then, None))
    for name in ("s45kv65", "n56"):  # the arms' replications on these rows
        if (HERE / f"eval-rows120-240-{name}" / "summary.json").exists():
            print(growing.sampled_row(f"{name}, this session's engine (paired with the first row)",
                                      growing.records(HERE / f"eval-rows120-240-{name}"), now["verify-fold-sampled"]))
    a, b = now["verify-fold-sampled"], then["verify-fold-sampled"]
    print("\n| now - then, paired by prompt | tau | " + " | ".join(growing.METRICS) + " |")
    print("|---|---|" + "---|" * len(growing.METRICS))
    for key, got in (("rows 120-239", (a, b)), ("rows 0-119", (arm(HERE, "s45now")["verify-fold-sampled"],
                                                              arm(GROWING, "s45")["verify-fold-sampled"]))):
        x, y = got
        for r in (*x.values(), *y.values()):
            r["tau"] = r["tokens"] / r["forwards"]
        print(f"| {key} | {growing.diff(x, y, 'tau')} | " + " | ".join(growing.diff(x, y, m) for m in growing.METRICS)
              + " |")
    greedy_now = growing.records(HERE / "eval-greedy-rows0-60-s45now")["verify-fold"]
    greedy_then = growing.records(GROWING / "eval-greedy-rows0-60-s45")["verify-fold"]
    same = sum(greedy_now[i]["text"] == greedy_then[i]["text"] for i in greedy_now)
    tau = [sum(r["tokens"] for r in g.values()) / sum(r["forwards"] for r in g.values())
           for g in (greedy_now, greedy_then)]
    print(f"\nGreedy s45, dev rows 0-59: {same} of {len(greedy_now)} answers identical to session 33's; tau "
          f"{tau[0]:.2f} now, {tau[1]:.2f} then")


def sampling_check() -> None:
    fresh = growing.records(HERE / "eval-rows0-60-fresh-base")
    old = growing.records(GROWING / "eval-rows0-60-s45")
    print("\n## Plain sampling, decoded again (dev GSM8K rows 0-59, 256 tokens)\n")
    print("| difference, paired by prompt | " + " | ".join(growing.METRICS) + " |")
    print("|---|" + "---|" * len(growing.METRICS))
    for label, a, b in (("base-sampled now - base-sampled then (reused by every arm)", fresh["base-sampled"],
                         old["base-sampled"]),
                        ("lossless verify sampled now - base-sampled now", fresh["verify-sampled"],
                         fresh["base-sampled"])):
        print(f"| {label} | " + " | ".join(growing.diff(a, b, m) for m in growing.METRICS) + " |")


if __name__ == "__main__":
    main()
