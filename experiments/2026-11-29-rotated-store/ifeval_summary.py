"""README's IFEval report: the candidate (eval-ifeval-kv84-n541) against the base's greedy answers, and paired with
session 53's 4-bit store and session 51's shipped fold on the same 541 prompts, budget and base answers (session 53's
`ifeval_summary.py` measures: instruction-level accuracy weighted by each prompt's instructions, 95% paired bootstrap;
tau; the answers' KV over all answers and over those that ran to 128 tokens).

    python experiments/2026-11-29-rotated-store/ifeval_summary.py > experiments/2026-11-29-rotated-store/ifeval.txt
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("ifeval_summary_53",
                                               HERE.parent / "2026-11-29-default-bits/ifeval_summary.py")
session53 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(session53)

session53.RUNS = {"kv84": HERE / "eval-ifeval-kv84-n541", **session53.RUNS}


def main() -> None:
    got = {name: session53.answers(run) for name, run in session53.RUNS.items()}
    base, fold = got["kv84"]["base"], session53.FOLD
    for name in session53.RUNS:
        rows = list(got[name][fold].values())
        weights = sum(r["instructions"] for r in rows)
        strict = 100 * sum(r["inst_strict"] * r["instructions"] for r in rows) / weights
        full = [r for r in rows if r["tokens"] >= 128]
        tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
        print(f"{name}: {len(rows)} prompts, tau {tau:.2f}, instruction-level strict {strict:.1f}; answers' KV "
              f"{session53.kv_share(rows):.3f} over all answers, {session53.kv_share(full):.3f} over the {len(full)} "
              f"of 128 tokens")
        for metric in ("inst_strict", "inst_loose"):
            print(f"  {metric} - base: {session53.diff(got[name][fold], base, metric)}")
        ids = sorted(got[name][fold])
        point, lo, hi = paired_bootstrap([got[name][fold][i]["rep4"] for i in ids], [base[i]["rep4"] for i in ids])
        print(f"  rep4 - base: {point:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    for other in ("q4", "fh4"):
        for metric in ("inst_strict", "inst_loose"):
            print(f"kv84 - {other}, {metric}: {session53.diff(got['kv84'][fold], got[other][fold], metric)}")


if __name__ == "__main__":
    main()
