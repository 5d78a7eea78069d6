"""Could a fixed, deterministic price per drafted position choose verify mode's draft lengths well? A model, not a
measurement: session 34's per-step trace (48 dev prompts, generous drafting) replayed under draft policies, each
step priced by a measured base-forward cost curve (several: they differ by machine state and run).

Policies: the default (stop head 0.3, lookup up to 10); `priced s`: keep the k drafts that maximise expected tokens
per step over (1 + s k), with each MSD draft's acceptance estimated by the stop head's 1 - p_stop and each lookup
draft's by the prompt's own lookup record so far (kept / tested at that position, from a prior); `best`: the same
with the real curve as the price; an oracle that drafts exactly what the base keeps. Steps are taken as independent
(the real step boundaries would move), so every figure is an estimate.

    python experiments/2026-11-27-draft-pricing/model.py > experiments/2026-11-27-draft-pricing/model.txt
"""

import json
import math
from pathlib import Path

HERE = Path(__file__).parent
TRACE = HERE.parent / "2026-11-27-lean-engine" / "trace_dev8-32.json"
HEAD_MS, MSD_FIRST_MS, MSD_LATER_MS, OVERHEAD_MS = 2.4, 3.5, 1.8, 2.0  # (as draft_policy.py there)
LOOKUP_PRIOR = (0.6, 2.0)  # prior acceptance of a lookup draft and its weight in steps


def curves() -> dict[str, list[float]]:
    """Forward ms by positions 1..11 for each measured curve (missing positions interpolated, 11 extrapolated)."""
    out = {}
    for path in [HERE.parent / "2026-11-27-growing-first" / "forward_cost.jsonl", HERE / "forward_cost.jsonl"]:
        for i, row in enumerate(map(json.loads, path.read_text().splitlines())):
            c = row["costs_ms"]
            out[f"{path.parent.name[11:]} #{i + 1} {row['mkl_cbwr'] or 'auto'}"] = [
                c[f"base_forward_{k}_positions_ms"] for k in range(1, 11)]
    ab = json.loads((HERE.parent / "2026-11-27-lean-engine" / "forward_ab.jsonl").read_text())["median_ms"]
    known = {int(k): v["after"] for k, v in ab.items()}
    out["lean-engine forward_ab"] = [known.get(k) or _interpolate(known, k) for k in range(1, 11)]
    for name, c in out.items():
        out[name] = c + [c[-1] + (c[-1] - c[-2])]
    return out


def _interpolate(known: dict[int, float], k: int) -> float:
    lo = max(x for x in known if x < k)
    hi = min((x for x in known if x > k), default=None)
    if hi is None:
        return known[lo] + (k - lo) * (known[lo] - known[max(x for x in known if x < lo)]) / (lo - max(
            x for x in known if x < lo))
    return known[lo] + (known[hi] - known[lo]) * (k - lo) / (hi - lo)


def replay(steps: list[dict], forward: list[float], choose) -> tuple[float, float]:
    """(tokens per ms, tokens per forward) of the trace when ``choose(step, record)`` picks each step's drafts."""
    total_ms = tokens = 0.0
    records: dict[str, list[list[int]]] = {}
    for s in steps:
        record = records.setdefault(s["prompt"], [[0, 0] for _ in range(10)])  # lookup [kept, tested] by position
        n = choose(s, record)
        kept = min(s["kept"], n)
        msd = 0 if s["lookup"] else min(s["n"], n + 1)
        head = HEAD_MS * math.ceil((kept + 1) / 3)
        total_ms += forward[n] + head + (MSD_FIRST_MS + MSD_LATER_MS * (msd - 1) if msd else 0) + OVERHEAD_MS
        tokens += kept + 1
        if s["lookup"]:
            for i in range(min(n, kept + 1)):
                record[i][1] += 1
                record[i][0] += i < kept
    return tokens / total_ms, tokens / len(steps)


def estimates(s: dict, record: list[list[int]]) -> list[float]:
    if not s["lookup"]:
        return s["pc"][:s["n"]]
    p, w = LOOKUP_PRIOR
    return [(k + p * w) / (t + w) for k, t in record[:s["n"]]]


def best_k(accept: list[float], price) -> int:
    best, n, expected, p = 1 / price(0), 0, 1.0, 1.0
    for i, a in enumerate(accept):
        p *= a
        expected += p
        if expected / price(i + 1) > best:
            best, n = expected / price(i + 1), i + 1
    return n


def main() -> None:
    steps = json.loads(TRACE.read_text())

    def default(s, record):
        if s["lookup"]:
            return s["n"]
        n = 0
        while n < s["n"] and s["pc"][n] >= 0.3:
            n += 1
        return n

    slopes = [0.03, 0.06, 0.1, 0.15, 0.2, 0.3]
    print(f"{len(steps)} steps of {len({s['prompt'] for s in steps})} prompts; speed relative to the default policy "
          f"under each curve (forward ms by positions 1..11)")
    for name, forward in curves().items():
        base_rate, base_tpf = replay(steps, forward, default)
        print(f"\n{name}: {[round(x, 1) for x in forward]}")
        print(f"  default (stop head 0.3, lookup 10)  {1000 * base_rate:5.1f} tok/s  {base_tpf:.2f} tokens/forward")
        rows = [(f"priced s={s}", lambda st, rec, s=s: best_k(estimates(st, rec), lambda k: 1 + s * k))
                for s in slopes]
        rows += [("best (priced by this curve)", lambda st, rec: best_k(estimates(st, rec), lambda k: forward[k])),
                 ("oracle", lambda st, rec: min(st["kept"], st["n"]))]
        for label, choose in rows:
            rate, tpf = replay(steps, forward, choose)
            print(f"  {label:<35} {rate / base_rate:5.3f}x  {tpf:.2f} tokens/forward")


if __name__ == "__main__":
    main()
