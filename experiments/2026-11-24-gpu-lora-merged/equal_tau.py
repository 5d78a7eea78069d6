"""Compare two models of a decode_fidelity result at equal tau: each knob of model B against model A's curve, read
by linear interpolation between A's knobs (only where B's tau lies inside A's range).

    python experiments/2026-11-24-gpu-lora-merged/equal_tau.py experiments/2026-11-24-gpu-lora-merged/decode_fidelity.json
"""

import json
import sys

METRICS = ("nll_per_token", "worst_token_nll", "rep4")


def curve(result: dict, model: str) -> list[dict]:
    points = [r["summary"] for r in result["runs"] if r["model"] == model]
    return sorted(points, key=lambda s: s["tau"])


def at_tau(points: list[dict], tau: float, metric: str) -> float | None:
    for lo, hi in zip(points, points[1:]):
        if lo["tau"] <= tau <= hi["tau"]:
            w = (tau - lo["tau"]) / (hi["tau"] - lo["tau"])
            return lo[metric] + w * (hi[metric] - lo[metric])
    return None


def main() -> None:
    result = json.loads(open(sys.argv[1]).read())
    a, b = result["settings"]["models"][:2]
    ref = curve(result, a)
    print(f"{b} against {a}'s curve at equal tau")
    for point in curve(result, b):
        cells = []
        for m in METRICS:
            other = at_tau(ref, point["tau"], m)
            cells.append(f"{m} {point[m]:.3f} vs {other:.3f}" if other is not None else f"{m} {point[m]:.3f} vs -")
        print(f"tau {point['tau']:.3f}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
