"""Session 42's quality suite for the fold reader (`reader_suite.sh`), side by side with the shipped model's runs on the
same prompts: each band (the difference of the method's mean from its reference's, the project's paired bootstrap,
95%) for both, tau and the answers' KV share, and the reader paired with the shipped model by prompt on each metric
(IFEval's accuracies weighted by the prompt's instructions, as the bands are).

    python experiments/2026-11-27-keep-fold-full/suite_summary.py > experiments/2026-11-27-keep-fold-full/suite.txt
"""

from __future__ import annotations

import json
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).parent
EXP = HERE.parent
STEPS = [  # (step, the reader's run, the shipped model's run, its method name there)
    ("1 greedy 96", HERE / "eval-t96-l120-reader",
     EXP / "2026-11-26-fold-keep/eval-dev-default-segments-60-first-steps=8-p=0.7-c0.3-p10-l120", "verify-fold"),
    ("1c greedy 96, the shipped model decoded here (step 5: today's code and machine)", HERE / "eval-t96-l120-reader",
     HERE / "eval-t96-l120-s45", "verify-fold"),
    ("2 sampled 96", HERE / "eval-sampled-t96-l120-reader", EXP / "2026-11-26-sampled-fold/eval-dev-t96-l120",
     "verify-fold-sampled"),
    ("3 sampled chat 256", HERE / "eval-sampled-chat20-reader", HERE / "eval-sampled-chat20-s45",
     "verify-fold-sampled"),
    ("4 IFEval 128 (test)", HERE / "eval-ifeval-n541-reader",
     EXP / "2026-11-26-fold-keep/eval-ifeval-default-segments-60-first-steps=8-p=0.7-n541", "verify-fold"),
]
METRICS = ("nll_per_token", "worst_token_nll", "rep4")


def fold_method(summary: dict) -> str:
    return next(s["method"] for s in summary["summary"] if s["method"].startswith("verify-fold"))


def rows(run: Path, method: str) -> dict[tuple[str, str], dict]:
    found = {}
    for line in (run / "examples.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["method"] == method:
            found[(r["task"], r["id"])] = r
    return found


def main() -> None:
    for step, reader, shipped, shipped_method in STEPS:
        if not (reader / "summary.json").is_file():
            print(f"## step {step}: not run\n")
            continue
        print(f"## step {step}")
        ours = json.loads((reader / "summary.json").read_text())
        theirs = json.loads((shipped / "summary.json").read_text())
        method = fold_method(ours)
        for name, summary, m in (("reader", ours, method), ("shipped", theirs, shipped_method)):
            for s in summary["summary"]:
                if s["method"] == m:
                    kv = s.get("answer_kv_share")
                    print(f"{name:8s} {s['task']:6s} n={s['examples']:3d} tau {s['tau']:.2f}"
                          + (f" KV {kv:.3f}" if kv is not None else "")
                          + "".join(f" {k} {s[k]:.3f}" for k in ("inst_strict", "inst_loose") if k in s))
            for c in summary["comparisons"]:
                if c["method"] == m:
                    print(f"{name:8s} {c['task']:6s} {c['band_text']:40s} {c['diff']:+.3f} [{c['lo']:+.3f}, "
                          f"{c['hi']:+.3f}] {'yes' if c['point_inside'] else 'NO '} {c['verdict']}")
        a, b = rows(reader, method), rows(shipped, shipped_method)
        for task in sorted({t for t, _ in a}):
            ids = sorted(k for k in a if k[0] == task and k in b)
            for metric in METRICS + tuple(k for k in ("inst_strict", "inst_loose") if k in a[ids[0]]):
                weights = [a[i]["instructions"] for i in ids] if metric.startswith("inst") else None
                point, lo, hi = paired_bootstrap([a[i][metric] for i in ids], [b[i][metric] for i in ids], weights)
                print(f"reader - shipped {task:6s} {metric:16s} n={len(ids):3d} {point:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        print()


if __name__ == "__main__":
    main()
