"""README's IFEval report: the candidate (eval-ifeval-q4-n541) against the base's greedy answers and paired with the
shipped verify_fold (session 51's ../2026-11-29-default-ifeval/eval-fh4-n541, the same 541 prompts, budget and base
answers): instruction-level accuracy, strict and loose, weighted by each prompt's instructions, with 95% paired
bootstrap intervals over prompts; then tau and the answers' KV (the eval's, from the measured slots) over all answers
and over those that ran to the 128-token budget.

    python experiments/2026-11-29-default-bits/ifeval_summary.py > experiments/2026-11-29-default-bits/ifeval.txt
"""

from __future__ import annotations

import json
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).resolve().parent
RUNS = {"q4": HERE / "eval-ifeval-q4-n541", "fh4": HERE.parent / "2026-11-29-default-ifeval/eval-fh4-n541"}
FOLD = "verify-fold"


def answers(run: Path) -> dict[str, dict[str, dict]]:
    """{method: {prompt id: record}} of one eval."""
    out: dict = {}
    for line in (run / "examples.jsonl").read_text().splitlines():
        r = json.loads(line)
        out.setdefault(r["method"], {})[r["id"]] = r
    return out


def diff(a: dict[str, dict], b: dict[str, dict], metric: str) -> str:
    ids = sorted(a.keys() & b.keys())
    point, lo, hi = paired_bootstrap([a[i][metric] for i in ids], [b[i][metric] for i in ids],
                                     weights=[a[i]["instructions"] for i in ids])
    return f"{100 * point:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] points"


def kv_share(rows: list[dict]) -> float:
    return sum(r["kv_slots"] - r["kv_slots_ordinary"] + r["tokens"] - 1 for r in rows) / sum(r["tokens"] - 1
                                                                                             for r in rows)


def main() -> None:
    got = {name: answers(run) for name, run in RUNS.items()}
    base = got["q4"]["base"]
    for name in RUNS:
        fold = got[name][FOLD]
        rows = list(fold.values())
        weights = sum(r["instructions"] for r in rows)
        accuracy = {m: 100 * sum(r[m] * r["instructions"] for r in rows) / weights for m in ("inst_strict",
                                                                                              "inst_loose")}
        full = [r for r in rows if r["tokens"] >= 128]
        tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
        print(f"{name}: {len(rows)} prompts, tau {tau:.2f}, instruction-level strict {accuracy['inst_strict']:.1f}, "
              f"loose {accuracy['inst_loose']:.1f}; answers' KV {kv_share(rows):.3f} over all answers, "
              f"{kv_share(full):.3f} over the {len(full)} of 128 tokens")
        for metric in ("inst_strict", "inst_loose"):
            print(f"  {metric} - base: {diff(fold, base, metric)}")
    for metric in ("inst_strict", "inst_loose"):
        print(f"q4 - fh4, {metric}: {diff(got['q4'][FOLD], got['fh4'][FOLD], metric)}")
    rows = list(base.values())
    print(f"base: instruction-level strict "
          f"{100 * sum(r['inst_strict'] * r['instructions'] for r in rows) / sum(r['instructions'] for r in rows):.1f}")


if __name__ == "__main__":
    main()
