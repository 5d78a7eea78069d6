"""Each run's speed-up over HF `generate` in the same run, tokens per forward, drafts per step and share of outputs
identical to HF `generate`'s, by category (every `*.json` here, or in the folder given).

    python experiments/2026-11-27-draft-cap/summary.py > experiments/2026-11-27-draft-cap/summary.txt
"""

import json
import sys
from pathlib import Path

HERE = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent


def main() -> None:
    for path in sorted(HERE.glob("*.json")):
        run = json.loads(path.read_text())
        m = run["machine"]
        print(f"{path.name}: code at {m.get('git_commit')}, {m['cpu']}, torch {m['torch']}, {m['threads']} threads, "
              f"{m['dtype']}, {run['settings'].get('max_new_tokens')} new tokens, "
              f"{'sampled' if run.get('sampling') else 'greedy'}")
        for category in ("all", "chat", "math"):
            print(f"  {category}")
            for e in run["summary"]:
                if e["category"] == category:
                    print(f"    {e['method']:36} {e['decode_tok_s']:5.1f} tok/s  {e['speedup_vs_hf']:.2f}x  "
                          f"tau {e['tokens_per_forward']:.2f}  drafts/step {e.get('drafted_per_step', 0):.2f}  "
                          f"identical {e['identical_to_hf']:.2f}")
        print()


if __name__ == "__main__":
    main()
