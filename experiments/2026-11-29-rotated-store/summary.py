"""README's tables: check 1 (greedy, 120 dev GSM8K prompts, 96 tokens: the candidate against the base's greedy and
sampled answers, and paired with session 53's 4-bit candidate on the same prompts and base answers), check 2 (the
103 fresh chat dev prompts, three draws, 256 tokens: against the base's samples, rep4 against its greedy answers,
the measured answers' KV) and check 3 (speed.json); 95% paired bootstrap over prompts, each prompt's draws averaged.

    python experiments/2026-11-29-rotated-store/summary.py > experiments/2026-11-29-rotated-store/summary.txt
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("summary_53", HERE.parent / "2026-11-29-default-bits/summary.py")
session53 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(session53)  # (its helpers: session 48's and 52's)
BASE, FOLD, METRICS, SPIKE, diff = session53.BASE, session53.FOLD, session53.METRICS, session53.SPIKE, session53.diff
measured_share, records = session53.measured_share, session53.records

GREEDY, Q4_GREEDY = HERE / "greedy120-kv84", HERE.parent / "2026-11-29-default-bits/greedy240-q4"
FRESH = HERE / "eval-chat360-463"
WINDOW = 60  # answer tokens the candidate keeps whole
GREEDY_FOLD = "verify-fold"


def greedy() -> None:
    got, q4 = records(GREEDY), records(Q4_GREEDY)
    if got is None:
        print("check 1: greedy120-kv84 has not finished\n")
        return
    fold, base = got[GREEDY_FOLD], got["base"]
    q4 = {i: q4[GREEDY_FOLD][i] for i in fold}  # (its GSM8K half: the same 120 prompts)
    same = sum(fold[i][0]["text"] == base[i][0]["text"] for i in fold)
    same_q4 = sum(q4[i][0]["text"] == base[i][0]["text"] for i in fold)
    print("## Check 1: greedy, the first 120 dev GSM8K prompts, 96 tokens\n")
    print("| arm | answers the base's own text | rep4 - base (greedy) | nll_per_token - base-sampled "
          "| worst_token_nll - base-sampled | answers' KV |\n|---|---|---|---|---|---|")
    for name, arm in (("the candidate (8/4 bits, turned)", fold), ("session 53's 4-bit store", q4)):
        rows = [r for draws in arm.values() for r in draws]
        print(f"| {name} | {same if arm is fold else same_q4} of {len(arm)} | {diff(arm, base, 'rep4')} | "
              f"{diff(arm, got[BASE], 'nll_per_token')} | {diff(arm, got[BASE], 'worst_token_nll')} | "
              f"{measured_share(rows):.3f} |")
    print(f"\nthe candidate - the 4-bit store, rep4: {diff(fold, q4, 'rep4')}\n")


def fresh() -> None:
    got = records(FRESH)
    if got is None:
        print("check 2: eval-chat360-463 has not finished\n")
        return
    fold, base = got[FOLD], got[BASE]
    rows = [r for draws in fold.values() for r in draws]
    draws = len(rows) // len(fold)
    tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
    past = sum(r["tokens"] - 1 > WINDOW for r in rows) / len(rows)
    spikes = [sum(r["worst_token_nll"] > SPIKE for d in g.values() for r in d) / draws for g in (fold, base)]
    print("## Check 2: fresh chat dev prompts 360-462, three draws, 256 tokens, sampled T 0.7 top-p 0.9\n")
    print("| prompts x draws | tau | answers' KV (measured) | answers past the window | answers > 6 nats per draw "
          "(base-sampled's) | " + " | ".join(f"{m} - base-sampled" for m in METRICS) + " | rep4 - base (greedy) |")
    print("|---|---|---|---|---|" + "---|" * (len(METRICS) + 1))
    cells = [diff(fold, base, m) for m in METRICS] + [diff(fold, got["base"], "rep4")]
    print(f"| {len(fold)} x {draws} | {tau:.2f} | {measured_share(rows):.3f} | {past:.0%} | {spikes[0]:.1f} "
          f"({spikes[1]:.1f}) | " + " | ".join(cells) + " |\n")
    share = {dtype: stored_share(dtype) for dtype in ("fp32", "bf16")}
    print("the answers' KV a store would hold at each answer's end, from the token counts: " + ", ".join(
        f"{dtype} {session53.quantized.store_share(rows, ratio):.3f} (a stored slot {ratio:.3f} of a slot's bytes)"
        for dtype, ratio in share.items()) + "\n")


def stored_share(dtype: str, d: int = 64) -> float:
    """A stored slot's bytes over a cache slot's, at 8-bit keys (one scale per head) and 4-bit values (one scale
    per 32 channels) for heads of ``d`` channels, the scales in the cache's dtype."""
    scale = {"fp32": 4, "bf16": 2}[dtype]
    return (d + scale + d // 2 + scale * d // 32) / (2 * d * scale)


def speed() -> None:
    path = HERE / "speed.json"
    if not path.exists():
        print("check 3: speed.json has not been written\n")
        return
    result = json.loads(path.read_text())
    rows = {s["method"]: s for s in result["summary"] if s["category"] == "all"}
    hf = rows["hf_generate"]
    print("## Check 3: greedy, batch 1, 8 bench prompts, 256 tokens\n")
    print("| method | decode tok/s | vs HF | tau | KV bytes per output token (of HF's) |\n|---|---|---|---|---|")
    for name, s in rows.items():
        print(f"| {name} | {s['decode_tok_s']:.1f} | {s['speedup_vs_hf']:.2f}x | {s['tau']:.2f} | "
              f"{s['kv_bytes_per_token']:,.0f} ({s['kv_bytes_per_token'] / hf['kv_bytes_per_token']:.2f}) |")
    by = {(s["category"], s["method"]): s["speedup_vs_hf"] for s in result["summary"]}
    cats = sorted({c for c, _ in by if c != "all"})
    for name in rows:
        if name != "hf_generate":
            print(f"\n{name} by category ({', '.join(cats)}): "
                  + " / ".join(f"{by[(c, name)]:.2f}x" for c in cats), end="")
    print("\n")


if __name__ == "__main__":
    greedy()
    fresh()
    speed()
