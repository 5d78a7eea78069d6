"""Per category and method of `ab.py`'s run: pooled decode tok/s (tokens after the first group over decode seconds),
speed-up over HF `generate` in the same run, tokens per forward.

    python experiments/2026-11-27-fast-draw/summary.py experiments/2026-11-27-fast-draw/ab.jsonl
"""

import json
import sys


def main() -> None:
    lines = [json.loads(x) for x in open(sys.argv[1])]
    m, rows = lines[0]["machine"], lines[1:]
    print(f"{sys.argv[1]}: {m['cpu']}, torch {m['torch']}, {m['threads']} threads, {m['dtype']}, code at "
          f"{m.get('git_commit')}, sampled {lines[0]['sampling']}")
    for category in ("all", "chat", "math"):
        group = [r for r in rows if category in ("all", r["category"])]
        speed = {}
        for method in dict.fromkeys(r["method"] for r in group):
            rs = [r for r in group if r["method"] == method]
            speed[method] = sum(r["tokens"] - r["first_tokens"] for r in rs) / sum(r["decode_s"] for r in rs)
            tau = sum(r["tokens"] for r in rs) / sum(r["forwards"] for r in rs)
            print(f"  {category:5s} {method:24s} {len(rs):3d} prompts  {speed[method]:5.1f} tok/s  "
                  f"{speed[method] / speed['hf_generate']:.2f}x  tau {tau:.2f}")


if __name__ == "__main__":
    main()
