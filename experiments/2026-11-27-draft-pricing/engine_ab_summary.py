"""Summary of engine_ab.py's lines by arm and prompt source: tau, drafting steps, drafts kept, decode tok/s, and
whether every arm's answer equals the first arm's (lossless: it must).

    python experiments/2026-11-27-draft-pricing/engine_ab_summary.py experiments/2026-11-27-draft-pricing/engine_ab_dev8-32.jsonl
"""

import sys
from collections import defaultdict

from hamburger.data.io import read_jsonl


def main() -> None:
    rows = read_jsonl(sys.argv[1])
    head, rows = rows[0], rows[1:]
    m = head["machine"]
    print(f"{m['cpu']}, torch {m['torch']}, {m['threads']} threads, {m['dtype']}, code at {m['git_commit']}")
    first = {}
    for r in rows:
        first.setdefault(r["id"], r["token_ids"])
    for source in ("all", "t0", "self_instruct", "gsm8k"):
        print(source)
        by_arm = defaultdict(lambda: defaultdict(float))
        for r in rows:
            if source != "all" and not r["id"].startswith(source + ":"):
                continue
            s = by_arm[r["arm"]]
            for k in ("tokens", "forwards", "lookup_steps", "lookup_kept", "msd_steps", "msd_kept", "decode_s"):
                s[k] += r[k]
            s["prompts"] += 1
            s["same"] += r["token_ids"] == first[r["id"]]
        for arm, s in by_arm.items():
            steps = s["forwards"] - s["prompts"]  # (the prefill's forward yields the first token)
            looked, msd = s["lookup_kept"] / max(1, s["lookup_steps"]), s["msd_kept"] / max(1, s["msd_steps"])
            print(f"  {arm:<14} {int(s['prompts']):3d} prompts  tau {s['tokens'] / s['forwards']:.2f}  "
                  f"lookup steps {s['lookup_steps'] / steps:.2f} (kept {looked:.2f})  MSD steps "
                  f"{s['msd_steps'] / steps:.2f} (kept {msd:.2f})  {(s['tokens'] - s['prompts']) / s['decode_s']:.1f} "
                  f"tok/s  same answer {s['same'] / s['prompts']:.2f}")


if __name__ == "__main__":
    main()
