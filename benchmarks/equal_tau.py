"""Two models compared at equal tau: every knob of model B against model A's quality-vs-tau curve, read by linear
interpolation between A's knobs (only where B's tau lies inside A's range; outside it says `-`).

A curve comes from a `benchmarks/decode_fidelity.py` result (FILE:MODEL, the model as the result names it) or from
a `hamburger eval` / `hamburger calibrate` summary.json (FILE:TASK, its hamburger@knob methods on that task).

A decode_fidelity result may hold one model at several prefilters (`--prefilters`) and layouts (`--single-tails`):
`--prefilter-a` / `--prefilter-b` and `--layout-a` / `--layout-b` (0, 1, 1f, 1f2: `config.layout_name`) pick one
curve each, and `--anchor-base` adds the base's greedy decode (knob 1.0, tau 1) to both curves.

    python benchmarks/equal_tau.py RESULT.json:MODEL_A RESULT.json:MODEL_B
    python benchmarks/equal_tau.py old/summary.json:chat new/summary.json:chat
    python benchmarks/equal_tau.py R.json:M R.json:M --prefilter-a 0 --prefilter-b 0.5 --anchor-base
    python benchmarks/equal_tau.py R.json:M R.json:M --layout-a 0 --layout-b 1f --anchor-base
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hamburger.core.config import layout_name

METRICS = ("nll_per_token", "worst_token_nll", "rep4")


def curve(spec: str, prefilter: float | None = None, anchor_base: bool = False, tail: str | None = None) -> list[dict]:
    """The (tau, metrics) points of one model, by tau (decode_fidelity: only its decodes at ``prefilter`` and in
    layout ``tail`` if given, and with ``anchor_base`` the base's greedy decode, knob 1.0, as the point at tau 1)."""
    path, _, name = spec.rpartition(":")
    result = json.loads(Path(path).read_text())
    if "runs" in result:  # decode_fidelity
        points = [r["summary"] for r in result["runs"] if r["model"] == name
                  and (prefilter is None or r.get("prefilter", 0.0) == prefilter)
                  and (tail is None or layout_name(r.get("single_tail", 0), r.get("fold_tail", 0)) == tail)]
        if points and anchor_base:
            points += [r["summary"] for r in result["runs"] if r["model"] == "base greedy"]
    else:  # hamburger eval summary
        points = [s for s in result["summary"] if s["task"] == name and s["method"].startswith("hamburger@")]
    if not points:
        raise SystemExit(f"no knobs of {name!r} in {path}")
    return sorted(points, key=lambda s: s["tau"])


def at_tau(points: list[dict], tau: float, metric: str) -> float | None:
    """``metric`` of the curve at ``tau`` by linear interpolation (None outside the curve's tau range)."""
    for lo, hi in zip(points, points[1:]):
        if lo["tau"] <= tau <= hi["tau"] and hi["tau"] > lo["tau"]:
            w = (tau - lo["tau"]) / (hi["tau"] - lo["tau"])
            return lo[metric] + w * (hi[metric] - lo[metric])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the reference curve, FILE:MODEL or FILE:TASK")
    parser.add_argument("b", help="the model read against it, FILE:MODEL or FILE:TASK")
    parser.add_argument("--prefilter-a", type=float, default=None, help="decode_fidelity: A's decodes at this prefilter")
    parser.add_argument("--prefilter-b", type=float, default=None, help="decode_fidelity: B's decodes at this prefilter")
    parser.add_argument("--layout-a", default=None, help="decode_fidelity: A's decodes in this layout (0, 1, 1f, 1f2)")
    parser.add_argument("--layout-b", default=None, help="decode_fidelity: B's decodes in this layout (0, 1, 1f, 1f2)")
    parser.add_argument("--anchor-base", action="store_true",
                        help="decode_fidelity: add the base's greedy decode (tau 1) to both curves")
    args = parser.parse_args()
    ref = curve(args.a, args.prefilter_a, args.anchor_base, args.layout_a)

    def label(spec: str, q: float | None, tail: str | None) -> str:
        return spec + (f" (prefilter {q:g})" if q is not None else "") + (f" (layout {tail})" if tail else "")

    print(f"B = {label(args.b, args.prefilter_b, args.layout_b)} against A = "
          f"{label(args.a, args.prefilter_a, args.layout_a)} at equal tau (B vs A)")
    for point in curve(args.b, args.prefilter_b, args.anchor_base, args.layout_b):
        cells = []
        for m in METRICS:
            other = at_tau(ref, point["tau"], m)
            cells.append(f"{m} {point[m]:.3f} vs " + (f"{other:.3f}" if other is not None else "-"))
        print(f"tau {point['tau']:.3f}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
