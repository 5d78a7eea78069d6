"""What cost-aware draft lengths could gain in verify mode on session 33's Intel CPU: a model, not a measurement.

Replays trace_dev8-32.json (trace.py: every step drafted generously) under draft policies, pricing each step with
the base-forward costs by positions that experiments/2026-11-27-growing-first/forward_cost.jsonl measured (MKL's own
choice, or AVX2) plus the LM head (by chunks of 3 rows), the MSD's draft steps and a fixed overhead (the constants
below, from benchmarks.verify_bench's step costs and this session's profile). A trimmed step keeps min(kept, n)
drafts; steps are taken as independent (the real boundaries would move). Policies: the stop head at a threshold
with lookups capped; an oracle that drafts exactly what the base keeps; and the expected-tokens-per-ms choice of n
from acceptance estimates (the stop head's 1 - p_stop raw or recalibrated from this same trace; lookup drafts by
their position's mean acceptance in this trace), i.e. fitted in-sample: an upper estimate.

    python experiments/2026-11-27-lean-engine/draft_policy.py > experiments/2026-11-27-lean-engine/draft_policy.txt
"""

import json
import math
from pathlib import Path

HERE = Path(__file__).parent
COSTS = HERE.parent / "2026-11-27-growing-first" / "forward_cost.jsonl"
HEAD_MS, MSD_FIRST_MS, MSD_LATER_MS, OVERHEAD_MS = 2.4, 3.5, 1.8, 2.0
HF_MS_PER_TOKEN = 35.6  # HF `generate` in speed_t128-draft-lengths.json (same session, same machine)


def lookup_acceptance(steps: list[dict]) -> list[float]:
    """Acceptance of the i-th lookup draft given the ones before it were kept, i = 1..10."""
    rates = []
    for i in range(10):
        tested = [s for s in steps if s["lookup"] and s["n"] > i and s["kept"] >= i]
        rates.append(sum(s["kept"] > i for s in tested) / max(1, len(tested)))
    return rates


def main() -> None:
    steps = json.loads((HERE / "trace_dev8-32.json").read_text())
    looked = lookup_acceptance(steps)
    print(f"{len(steps)} steps, {sum(s['lookup'] for s in steps) / len(steps):.2f} of them drafted by lookup; "
          f"lookup acceptance by position {[round(a, 2) for a in looked]}")
    for row in map(json.loads, COSTS.read_text().splitlines()):
        c = row["costs_ms"]
        forward = {k: c[f"base_forward_{k}_positions_ms"] for k in range(1, 11)}
        forward[11] = forward[10] + (forward[10] - forward[9])

        def cost(positions: int, kept: int, msd_drafts: int) -> float:
            head = HEAD_MS * math.ceil((min(kept, positions - 1) + 1) / 3)
            drafting = 0.0 if not msd_drafts else MSD_FIRST_MS + MSD_LATER_MS * (msd_drafts - 1)
            return forward[positions] + head + drafting + OVERHEAD_MS

        def stop_head(threshold: float, lookup_cap: int = 10):
            def policy(s):
                if s["lookup"]:
                    return min(s["n"], lookup_cap), 0
                n = 0
                while n < s["n"] and s["pc"][n] >= threshold:
                    n += 1
                return n, n + (n < s["n"])  # (the stop head judges after each draft: one more is made)
            return policy

        def best_rate(estimate):
            def policy(s):
                accept = looked[:s["n"]] if s["lookup"] else [estimate(x) for x in s["pc"][:s["n"]]]
                best, n, expected, p = 1 / cost(1, 0, 0), 0, 1.0, 1.0
                for i, a in enumerate(accept):
                    p *= a
                    expected += p
                    rate = expected / cost(i + 2, math.ceil(expected) - 1, 0)
                    if rate > best:
                        best, n = rate, i + 1
                return n, 0 if s["lookup"] else min(s["n"], n + 1)
            return policy

        def oracle(s):
            n = min(s["kept"], s["n"])
            return n, 0 if s["lookup"] else min(s["n"], n + 1)

        print(f"\nMKL_CBWR={row['mkl_cbwr']}: forward ms by positions "
              f"{ {k: round(v, 1) for k, v in forward.items()} }")
        policies = [("stop head 0.3, lookup 10 (the default)", stop_head(0.3)),
                    ("stop head 0.3, lookup 3", stop_head(0.3, 3)), ("stop head 0.5, lookup 5", stop_head(0.5, 5)),
                    ("best rate, stop head as is", best_rate(lambda x: x)),
                    ("best rate, stop head 0.25 + 0.67 x", best_rate(lambda x: 0.25 + 0.67 * x)),
                    ("oracle (drafts exactly the kept ones)", oracle)]
        for name, policy in policies:
            total_ms = tokens = 0
            for s in steps:
                n, msd = policy(s)
                kept = min(s["kept"], n)
                total_ms += cost(n + 1, kept, msd)
                tokens += kept + 1
            print(f"  {name:<40} {1000 * tokens / total_ms:5.1f} tok/s  tokens per forward {tokens / len(steps):.2f}"
                  f"  {HF_MS_PER_TOKEN * tokens / total_ms:.2f}x HF generate")


if __name__ == "__main__":
    main()
