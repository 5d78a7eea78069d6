"""Session 42's quality suite for the fold reader (`reader_suite.sh`), side by side with the shipped model's runs on the
same prompts: each band (the difference of the method's mean from its reference's, the project's paired bootstrap,
95%) for both, tau and the answers' KV share, and the reader paired with the shipped model by prompt on each metric
(IFEval's accuracies weighted by the prompt's instructions, as the bands are).

    python experiments/2026-11-27-keep-fold-full/suite_summary.py [NAME] \
        > experiments/2026-11-27-keep-fold-full/suite.txt

NAME: the reader's tag in `reader_suite.sh` (default ``reader``, session 42's af-warm).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).parent
EXP = HERE.parent
NAME = sys.argv[1] if len(sys.argv) > 1 else "reader"
STEPS = [  # (step, the reader's run, the shipped model's run, its method name there)
    ("1 greedy 96", HERE / f"eval-t96-l120-{NAME}",
     EXP / "2026-11-26-fold-keep/eval-dev-default-segments-60-first-steps=8-p=0.7-c0.3-p10-l120", "verify-fold"),
    ("1c greedy 96, the shipped model decoded here (step 5: today's code and machine)", HERE / f"eval-t96-l120-{NAME}",
     HERE / "eval-t96-l120-s45", "verify-fold"),
    ("2 sampled 96", HERE / f"eval-sampled-t96-l120-{NAME}", EXP / "2026-11-26-sampled-fold/eval-dev-t96-l120",
     "verify-fold-sampled"),
    ("2c sampled 96, the shipped model decoded here (step 6: today's code)", HERE / f"eval-sampled-t96-l120-{NAME}",
     HERE / "eval-sampled-t96-l120-s45", "verify-fold-sampled"),
    ("3 sampled chat 256", HERE / f"eval-sampled-chat20-{NAME}", HERE / "eval-sampled-chat20-s45",
     "verify-fold-sampled"),
    ("4 IFEval 128 (test)", HERE / f"eval-ifeval-n541-{NAME}",
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
        differ = [k for k in a if k in b and a[k]["text"] != b[k]["text"]]
        if differ:  # where the two answers part, as a share of the reader's text; which repeats more there
            starts = sorted(next((i for i, (x, y) in enumerate(zip(a[k]["text"], b[k]["text"])) if x != y),
                                 min(len(a[k]["text"]), len(b[k]["text"]))) / max(len(a[k]["text"]), 1)
                            for k in differ)
            print(f"answers that differ: {len(differ)} of {len(a)}, from {starts[0]:.2f} of the text on (median "
                  f"{starts[len(starts) // 2]:.2f}); rep4 higher with the reader in "
                  f"{sum(a[k]['rep4'] > b[k]['rep4'] for k in differ)}, lower in "
                  f"{sum(a[k]['rep4'] < b[k]['rep4'] for k in differ)}")
        for task in sorted({t for t, _ in a}):
            ids = sorted(k for k in a if k[0] == task and k in b)
            for metric in METRICS + tuple(k for k in ("inst_strict", "inst_loose") if k in a[ids[0]]):
                weights = [a[i]["instructions"] for i in ids] if metric.startswith("inst") else None
                point, lo, hi = paired_bootstrap([a[i][metric] for i in ids], [b[i][metric] for i in ids], weights)
                print(f"reader - shipped {task:6s} {metric:16s} n={len(ids):3d} {point:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        print()


if __name__ == "__main__":
    main()
