"""README's table: each quantized-history arm on dev GSM8K rows 360-479 (three draws, 256 tokens) against the base's
sampled answers, paired with fh4 (the shipped fold with its four full heads, the same prompts and seeds) and its rep4
against the base's greedy answers; the bytes a real store would hold at each answer's end, from its token count (and
for the library's store, q4-lib, the eval's answers' KV from its measured slots too).

    python experiments/2026-11-29-quantized-history/summary.py > experiments/2026-11-29-quantized-history/summary.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-27-draws"))
from summary import BASE, FOLD, METRICS, SPIKE, diff  # noqa: E402

from hamburger.eval.paired import by_prompt  # noqa: E402

FH4 = HERE.parent / "2026-11-28-full-head-cache/eval-rows360-480-fh4"
ARMS = {"q8": ("int8, one scale per (token, key/value head)", {"fp32": 68 / 256, "bf16": 66 / 128}),
        "q4g32": ("int4, one scale per 32 channels", {"fp32": 40 / 256, "bf16": 36 / 128}),
        "q4-lib": ("the library's 4-bit store, `segments:60:0.45:none:bits=4`", {"fp32": 40 / 256, "bf16": 36 / 128})}
MEASURED = {"q4-lib"}  # the library's: its records hold the store's measured slots (whole-slot equivalents)
WINDOW, SHARE = 60, 0.45  # the default fold's window: tokens older than it are stored rounded


def records(run: Path) -> dict | None:
    if not (run / "summary.json").exists():
        return None
    return by_prompt([json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()], task_of=None)


def store_share(rows: list[dict], ratio: float) -> float:
    """The answers' KV a store holding rounded slots at ``ratio`` of a slot's bytes would hold at their end (the eval's
    answers' KV: over the answer tokens fed, all answers' slots over all their tokens)."""
    fed = [r["tokens"] - 1 for r in rows]
    rounded = [max(0, f - max(WINDOW, int(SHARE * f))) for f in fed]
    return sum(f - q + q * ratio for f, q in zip(fed, rounded)) / sum(fed)


def measured_share(rows: list[dict]) -> float:
    """The eval's answers' KV: the answers' slots at their end (whole-slot equivalents) over their tokens fed."""
    return sum(r["kv_slots"] - r["kv_slots_ordinary"] + r["tokens"] - 1 for r in rows) / sum(r["tokens"] - 1
                                                                                             for r in rows)


def main() -> None:
    fh4 = records(FH4)
    print("## Dev GSM8K rows 360-479, three draws, 256 tokens, sampled T 0.7 top-p 0.9\n")
    print("| arm | prompts x draws | tau | a real store's answers' KV, fp32 / bf16 | answers > 6 nats per draw "
          "(base-sampled's) | " + " | ".join(f"{m} - base-sampled" for m in METRICS)
          + " | worst_token_nll - fh4 | nll_per_token - fh4 | rep4 - base (greedy) |")
    print("|---|---|---|---|---|" + "---|" * (len(METRICS) + 3))
    for name, (label, ratios) in ARMS.items():
        got = records(HERE / f"eval-rows360-480-{name}")
        if got is None:
            continue
        fold, base = got[FOLD], got[BASE]
        rows = [r for draws in fold.values() for r in draws]
        draws = len(rows) // len(fold)
        tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
        kv = " / ".join(f"{store_share(rows, ratios[d]):.3f}" for d in ("fp32", "bf16"))
        if name in MEASURED:  # (the eval's answers' KV, from the store's measured slots)
            kv = f"{measured_share(rows):.3f} measured; " + kv
        spikes = [sum(r["worst_token_nll"] > SPIKE for d in g.values() for r in d) / draws for g in (fold, base)]
        cells = [diff(fold, base, m) for m in METRICS] + [diff(fold, fh4[FOLD], m) for m in METRICS[:2]]
        cells.append(diff(fold, got["base"], "rep4"))
        print(f"| {name}: {label} | {len(fold)} x {draws} | {tau:.2f} | {kv} | {spikes[0]:.1f} ({spikes[1]:.1f}) | "
              + " | ".join(cells) + " |")
    rows = [r for draws in fh4[FOLD].values() for r in draws]
    print(f"\nfh4 on these rows, for reference: worst_token_nll - base-sampled {diff(fh4[FOLD], fh4[BASE], METRICS[0])}"
          f", nll_per_token - base-sampled {diff(fh4[FOLD], fh4[BASE], METRICS[1])}, "
          f"rep4 - base (greedy) {diff(fh4[FOLD], fh4['base'], 'rep4')} ({len(rows)} answers)")


if __name__ == "__main__":
    main()
