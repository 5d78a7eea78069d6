"""README's table of check 2: the candidate (`segments:60:0.45:none:bits=4`) and the shipped verify_fold (fh4) sampled
on the 120 fresh chat dev prompts (three draws, 256 tokens), each against the base's sampled answers (the same seeds)
and the candidate paired with fh4, each prompt counted once as the mean over its draws (95% paired bootstrap); rep4
against the base's greedy answers; the answers' KV from the eval's measured slots; and how many answers grew past
the window, where the store or the fold acts at all.

    python experiments/2026-11-29-default-bits/summary.py > experiments/2026-11-29-default-bits/summary.txt
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-27-draws"))
from summary import BASE, FOLD, METRICS, SPIKE, diff  # noqa: E402

_spec = importlib.util.spec_from_file_location("quantized_summary",
                                               HERE.parent / "2026-11-29-quantized-history/summary.py")
quantized = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(quantized)
measured_share, records = quantized.measured_share, quantized.records

ARMS = {"q4": ("the candidate, `segments:60:0.45:none:bits=4`", HERE / "eval-chat240-360"),
        "fh4": ("the shipped verify_fold (default fold, fold reader, four full heads)", HERE / "eval-chat240-360-fh4")}
WINDOW = 60  # answer tokens the candidate and the shipped fold keep whole


def main() -> None:
    got = {name: records(run) for name, (_, run) in ARMS.items()}
    if got["q4"] is None:
        raise SystemExit("eval-chat240-360 has not finished")
    print("## Fresh chat dev prompts 240-359, three draws, 256 tokens, sampled T 0.7 top-p 0.9\n")
    print("| arm | prompts x draws | tau | answers' KV (measured) | answers past the window "
          "| answers > 6 nats per draw (base-sampled's) | " + " | ".join(f"{m} - base-sampled" for m in METRICS)
          + " | rep4 - base (greedy) | worst_token_nll - fh4 | nll_per_token - fh4 |")
    print("|---|---|---|---|---|---|" + "---|" * (len(METRICS) + 3))
    for name, (label, _) in ARMS.items():
        arm = got[name]
        if arm is None:
            continue
        fold, base = arm[FOLD], arm[BASE]
        rows = [r for draws in fold.values() for r in draws]
        draws = len(rows) // len(fold)
        tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
        past = sum(r["tokens"] - 1 > WINDOW for r in rows) / len(rows)
        spikes = [sum(r["worst_token_nll"] > SPIKE for d in g.values() for r in d) / draws for g in (fold, base)]
        cells = [diff(fold, base, m) for m in METRICS] + [diff(fold, arm["base"], "rep4")]
        cells += ([diff(fold, got["fh4"][FOLD], m) for m in METRICS[:2]] if name != "fh4" and got["fh4"] else
                  ["-", "-"])
        print(f"| {name}: {label} | {len(fold)} x {draws} | {tau:.2f} | {measured_share(rows):.3f} | {past:.0%} | "
              f"{spikes[0]:.1f} ({spikes[1]:.1f}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
