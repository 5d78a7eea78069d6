"""Paired comparisons with the base: differences with a paired bootstrap 95% interval over prompts, and
whether each difference lies within its target band.

A band says how much worse than a reference method a metric may be:
  metric      per-answer field (see `evaluate`), averaged over prompts (weighted by `weight` when given,
              e.g. IFEval instruction level: weighted by the prompt's number of instructions)
  reference   the method compared against: "base" (greedy) or "base-sampled"
  higher_is_better, tolerance   allowed worsening: diff >= -tolerance (higher is better) or
              diff <= +tolerance (lower is better), with diff = method - reference
A sampled method (its name ends in "-sampled", e.g. "verify-fold-sampled") is held to the base's sampled
answers: wherever a band's reference is "base", it is compared with "base-sampled" instead (`Band.held_to`).
Verdict of one difference: "inside" (the whole 95% interval is in the band), "outside" (the whole interval
is out of it), else "undecided". The point estimate alone decides `point_inside`.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, replace

SAMPLED_SUFFIX = "-sampled"  # a method decoded with the base-sampled settings (`plausibility.SAMPLED`)
BASE_METHODS = ("base", "base" + SAMPLED_SUFFIX)  # the unchanged base's greedy and sampled answers: the references


def is_sampled(method: str) -> bool:
    return method.endswith(SAMPLED_SUFFIX)


def held_reference(method: str, reference: str = BASE_METHODS[0]) -> str:
    """The method ``method`` is compared with where the rule names ``reference``: a sampled HAMburger method's "base"
    is "base-sampled" (the base's own answers keep ``reference``)."""
    if reference == BASE_METHODS[0] and is_sampled(method) and method not in BASE_METHODS:
        return BASE_METHODS[1]
    return reference


@dataclass(frozen=True)
class Band:
    metric: str
    reference: str
    higher_is_better: bool
    tolerance: float
    weight: str | None = None

    def describe(self) -> str:
        sign = ">=" if self.higher_is_better else "<="
        tol = -self.tolerance if self.higher_is_better else self.tolerance
        return f"{self.metric} - {self.reference} {sign} {tol:+g}"

    def held_to(self, method: str) -> "Band":
        """This band as it applies to ``method``: a sampled method's "base" reference is "base-sampled"."""
        if is_sampled(method) and self.reference == "base":
            return replace(self, reference=BASE_METHODS[1])
        return self

    def contains(self, diff: float) -> bool:
        return diff >= -self.tolerance if self.higher_is_better else diff <= self.tolerance


# The project's target bands (issue #14). IFEval accuracy: at most 1 point below base greedy; NLL/token and
# worst-token NLL: no higher than the base's own sampled answers; repetition: no higher than base greedy.
DEFAULT_BANDS = (
    Band("inst_strict", "base", True, 0.01, weight="instructions"),
    Band("inst_loose", "base", True, 0.01, weight="instructions"),
    Band("nll_per_token", "base-sampled", False, 0.0),
    Band("worst_token_nll", "base-sampled", False, 0.0),
    Band("rep4", "base", False, 0.0),
)


def parse_bands(spec: str | None) -> tuple[Band, ...]:
    """Bands from ``metric:reference:higher|lower:tolerance[:weight]`` items, comma-separated
    (None: `DEFAULT_BANDS`)."""
    if not spec:
        return DEFAULT_BANDS
    from hamburger.errors import HamburgerError

    out = []
    for item in spec.split(","):
        parts = item.strip().split(":")
        if len(parts) not in (4, 5) or parts[2] not in ("higher", "lower"):
            raise HamburgerError(f"bad band {item!r}: want metric:reference:higher|lower:tolerance[:weight]")
        try:
            tol = float(parts[3])
        except ValueError:
            raise HamburgerError(f"bad band {item!r}: tolerance must be a number") from None
        out.append(Band(parts[0], parts[1], parts[2] == "higher", tol, parts[4] if len(parts) == 5 else None))
    return tuple(out)


def _mean(values: list[float], weights: list[float], idx) -> float:
    total = sum(weights[i] for i in idx)
    return sum(values[i] * weights[i] for i in idx) / total if total else 0.0


def paired_bootstrap(a: list[float], b: list[float], weights: list[float] | None = None, n_boot: int = 2000,
                     seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """Difference of (weighted) means, mean(a) - mean(b), over paired units (prompts), with a percentile
    bootstrap interval: units are resampled with replacement, the pairs kept together."""
    if len(a) != len(b) or not a:
        raise ValueError("paired_bootstrap needs two equally long, non-empty lists")
    w = weights or [1.0] * len(a)
    diff = [x - y for x, y in zip(a, b)]
    point = _mean(diff, w, range(len(a)))
    rng = random.Random(seed)
    n = len(a)
    stats = sorted(_mean(diff, w, [rng.randrange(n) for _ in range(n)]) for _ in range(n_boot))
    lo = stats[int((1 - level) / 2 * n_boot)]
    hi = stats[min(n_boot - 1, int((1 + level) / 2 * n_boot))]
    return point, lo, hi


def verdict(band: Band, lo: float, hi: float) -> str:
    if band.contains(lo) and band.contains(hi):
        return "inside"
    if not band.contains(lo) and not band.contains(hi):
        return "outside"
    return "undecided"


def by_prompt(records: list[dict], task_of=lambda r: r["task"]) -> dict:
    """Records grouped as {(task, method): {example id: [its records, one per draw]}} (a sampled method may answer
    each prompt several times, `run.run_eval`'s draws; ``task_of`` None groups by method alone)."""
    by: dict = {}
    for r in records:
        key = (task_of(r), r["method"]) if task_of else r["method"]
        by.setdefault(key, {}).setdefault(r["id"], []).append(r)
    return by


def draw_mean(draws: list[dict], metric: str) -> float:
    """One prompt's ``metric``, averaged over its draws."""
    return sum(float(r[metric]) for r in draws) / len(draws)


def compare(records: list[dict], bands=DEFAULT_BANDS, n_boot: int = 2000, seed: int = 0) -> list[dict]:
    """Every band on every (task, method) that has its metric: difference with the band's reference
    method (`Band.held_to` the method), paired by example id (a prompt answered in several draws: the mean over
    them), with its bootstrap interval and verdict."""
    by = by_prompt(records)
    out = []
    for (task, method), rows in by.items():
        if method in BASE_METHODS:
            continue
        for band in (b.held_to(method) for b in bands):
            ref = by.get((task, band.reference))
            first = next(iter(rows.values()))[0]
            if ref is None or band.metric not in first:
                continue
            ids = [i for i in rows if i in ref]
            a = [draw_mean(rows[i], band.metric) for i in ids]
            b = [draw_mean(ref[i], band.metric) for i in ids]
            w = [float(rows[i][0][band.weight]) for i in ids] if band.weight else None
            diff, lo, hi = paired_bootstrap(a, b, w, n_boot, seed)
            out.append({"task": task, "method": method, "confidence": first.get("confidence"),
                        "band": asdict(band), "band_text": band.describe(), "examples": len(ids),
                        "diff": diff, "lo": lo, "hi": hi, "point_inside": band.contains(diff),
                        "verdict": verdict(band, lo, hi)})
    return out


def per_type(records: list[dict], reference: str = "base", n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """IFEval instruction-level strict accuracy per instruction type: each method minus `reference` (a sampled
    method's "base" is "base-sampled", as in `Band.held_to`), paired over the prompts that carry the type."""
    by = by_prompt([r for r in records if r["task"] == "ifeval"], task_of=None)
    out = []
    for method, rows in by.items():
        held = held_reference(method, reference)
        ref = by.get(held, {})
        if method == held:
            continue
        types = sorted({f["id"] for draws in rows.values() for r in draws for f in r["followed"]})
        for t in types:
            a, b, w = [], [], []
            for i, draws in rows.items():
                if i not in ref:
                    continue
                mine = [f["strict"] for r in draws for f in r["followed"] if f["id"] == t]
                theirs = [f["strict"] for r in ref[i] for f in r["followed"] if f["id"] == t]
                if mine:
                    a.append(sum(mine) / len(mine))
                    b.append(sum(theirs) / len(theirs))
                    w.append(len(mine) / len(draws))  # (the prompt's instructions of the type)
            if a:
                diff, lo, hi = paired_bootstrap(a, b, w, n_boot, seed)
                out.append({"method": method, "reference": held, "type": t, "instructions": int(sum(w)),
                            "acc": _mean(a, w, range(len(a))), "ref_acc": _mean(b, w, range(len(b))),
                            "diff": diff, "lo": lo, "hi": hi})
    return out


def band_lines(comparisons: list[dict]) -> list[str]:
    """The markdown table of differences and band verdicts for summary.md."""
    lines = ["| task | method | metric vs reference (band) | n | diff | 95% CI | point in band | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f"| {c['task']} | {c['method']} | {c['band_text']} | {c['examples']} | {c['diff']:+.3f} | "
                     f"[{c['lo']:+.3f}, {c['hi']:+.3f}] | {'yes' if c['point_inside'] else 'no'} | {c['verdict']} |")
    return lines


def type_lines(rows: list[dict]) -> list[str]:
    lines = ["| method | instruction type | n | accuracy | reference | its accuracy | diff | 95% CI |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method']} | {r['type']} | {r['instructions']} | {100 * r['acc']:.1f} | {r['reference']} | "
                     f"{100 * r['ref_acc']:.1f} | {100 * r['diff']:+.1f} | "
                     f"[{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}] |")
    return lines
