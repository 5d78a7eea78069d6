"""Summary of `engine_ab.py` runs: per category and arm, tokens per forward, the steps lookup (prompt or table) and the
MSD drafted and what they kept, decode tok/s, and (greedy) whether every arm printed the same answer as the first.

    python engine_ab_summary.py RUN.jsonl [RUN2.jsonl ...]
"""

import json
import sys
from collections import defaultdict


def category(row_id: str) -> str:
    return "gsm8k" if row_id.startswith("gsm8k") else "chat"


def main() -> None:
    for path in sys.argv[1:]:
        lines = [json.loads(x) for x in open(path)]
        head, rows = lines[0], lines[1:]
        m = head["machine"]
        print(f"{path}: {m['cpu']}, torch {m['torch']}, {m['threads']} threads, {m['dtype']}, code at "
              f"{m.get('git_commit')}, drafter {head['drafter']}, {'sampled' if head['sample'] else 'greedy'}")
        first = {}
        for r in rows:
            first.setdefault(r["id"], r["token_ids"])
        for cat in ("all", "chat", "gsm8k"):
            arms = defaultdict(list)
            for r in rows:
                if cat in ("all", category(r["id"])):
                    arms[r["arm"]].append(r)
            print(f"  {cat}")
            for arm, rs in arms.items():
                total = lambda k: sum(r[k] for r in rs)  # noqa: E731
                steps = total("forwards")
                same = sum(r["token_ids"] == first[r["id"]] for r in rs) / len(rs)
                lookup_kept = total("lookup_kept") / max(1, total("lookup_steps"))
                msd = max(1, total("msd_steps"))
                print(f"    {arm:14s} {len(rs):3d} prompts  tau {total('tokens') / steps:.2f}  "
                      f"lookup steps {total('lookup_steps') / steps:.2f} (kept {lookup_kept:.2f})  "
                      f"MSD steps {total('msd_steps') / steps:.2f} (drafted {total('msd_drafted') / msd:.2f}, "
                      f"kept {total('msd_kept') / msd:.2f})  "
                      f"{(total('tokens') - len(rs)) / total('decode_s'):.1f} tok/s  same answer {same:.2f}")


if __name__ == "__main__":
    main()
