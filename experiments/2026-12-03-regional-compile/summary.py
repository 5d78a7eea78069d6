"""Medians per arm of results.jsonl (run.sh) and the rule's two ratios (README.md): python summary.py"""

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    runs = [json.loads(line) for line in (HERE / "results.jsonl").read_text().splitlines()]
    arms = {}
    for r in runs:
        arms.setdefault(r["compile_region"] or "eager", []).append(r)
    med = {}
    print("arm     runs  warmup_s (each)          median  tok/s wall (each)   median  graphs")
    for arm, rs in arms.items():
        med[arm] = {k: statistics.median(r[k] for r in rs) for k in ("warmup_s", "tok_s_wall")}
        print(f"{arm:7} {len(rs):4}  {str([r['warmup_s'] for r in rs]):24} {med[arm]['warmup_s']:6.1f}  "
              f"{str([r['tok_s_wall'] for r in rs]):18} {med[arm]['tok_s_wall']:6.1f}  "
              f"{[r.get('graphs') for r in rs]}")
    warm = med["layer"]["warmup_s"] / med["stack"]["warmup_s"]
    speed = med["layer"]["tok_s_wall"] / med["stack"]["tok_s_wall"]
    print(f"layer / stack: warm-up wall {warm:.3f}x (rule: <= 0.5), timed tok/s {speed:.3f}x (rule: >= 0.9) -> "
          f"{'layer becomes the default' if warm <= 0.5 and speed >= 0.9 else 'stack stays the default'}")
    print(f"layer / eager: timed tok/s {med['layer']['tok_s_wall'] / med['eager']['tok_s_wall']:.3f}x; "
          f"stack / eager {med['stack']['tok_s_wall'] / med['eager']['tok_s_wall']:.3f}x")


if __name__ == "__main__":
    main()
