"""README's table: the shipped default fold (`k8v4r`, eval-rows360-480-k8v4r) on dev GSM8K rows 360-479 (three draws,
256 tokens) against the base's sampled answers and its greedy ones, paired with session 52's library 4-bit store
(`q4-lib`, the same rows, seeds and base answers) and with fh4 (the fold shipped then); session 52's rows of
`../2026-11-29-quantized-history/summary.py` beside it.

    python experiments/2026-11-29-default-math/summary.py > experiments/2026-11-29-default-math/summary.txt
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("summary_52", HERE.parent / "2026-11-29-quantized-history/summary.py")
session52 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(session52)
BASE, FOLD, METRICS, SPIKE, diff, records = (session52.BASE, session52.FOLD, session52.METRICS, session52.SPIKE,
                                             session52.diff, session52.records)


def main() -> None:
    got = records(HERE / "eval-rows360-480-k8v4r")
    if got is None:
        print("eval-rows360-480-k8v4r has not finished")
        return
    fold, base = got[FOLD], got[BASE]
    rows = [r for draws in fold.values() for r in draws]
    draws = len(rows) // len(fold)
    tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
    spikes = [sum(r["worst_token_nll"] > SPIKE for d in g.values() for r in d) / draws for g in (fold, base)]
    q4 = records(session52.HERE / "eval-rows360-480-q4-lib")[FOLD]
    fh4 = records(session52.FH4)[FOLD]
    print("## The default fold (`segments:60:0.45:none:bits=8/4:rotate`), dev GSM8K rows 360-479, three draws, "
          "256 tokens, sampled T 0.7 top-p 0.9\n")
    print("| prompts x draws | tau | answers' KV (measured) | answers > 6 nats per draw (base-sampled's) | "
          + " | ".join(f"{m} - base-sampled" for m in METRICS) + " | rep4 - base (greedy) |")
    print("|---|---|---|---|" + "---|" * (len(METRICS) + 1))
    cells = [diff(fold, base, m) for m in METRICS] + [diff(fold, got["base"], "rep4")]
    print(f"| {len(fold)} x {draws} | {tau:.2f} | {session52.measured_share(rows):.3f} | {spikes[0]:.1f} "
          f"({spikes[1]:.1f}) | " + " | ".join(cells) + " |\n")
    for name, other in (("q4-lib", q4), ("fh4", fh4)):
        print(f"the default - {name}: " + ", ".join(f"{m} {diff(fold, other, m)}" for m in METRICS))
    print("\nSession 52's arms on these rows:\n")
    session52.main()


if __name__ == "__main__":
    main()
