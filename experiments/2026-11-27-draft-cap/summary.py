"""Each run's speed-up over HF `generate` in the same run, tokens per forward, drafts per step and share of outputs
identical to HF `generate`'s, by category (every `*.json` here, or in the folder given).

    python experiments/2026-11-27-draft-cap/summary.py > experiments/2026-11-27-draft-cap/summary.txt
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
_spec = importlib.util.spec_from_file_location(
    "lean_engine_summary", Path(__file__).resolve().parent.parent / "2026-11-27-lean-engine" / "summary.py")
lean_engine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lean_engine)


def main() -> None:
    def header(run: dict) -> str:
        m = run["machine"]
        return (f"code at {m.get('git_commit')}, {m['cpu']}, torch {m['torch']}, {m['threads']} threads, "
                f"{m['dtype']}, {run['settings'].get('max_new_tokens')} new tokens, "
                f"{'sampled' if run.get('sampling') else 'greedy'}")

    lean_engine.print_runs(sorted(HERE.glob("*.json")), header,
                           lambda e: f"{e['method']:36} {e['decode_tok_s']:5.1f} tok/s  {e['speedup_vs_hf']:.2f}x  "
                                     f"tau {e['tokens_per_forward']:.2f}  drafts/step "
                                     f"{e.get('drafted_per_step', 0):.2f}  identical {e['identical_to_hf']:.2f}")


if __name__ == "__main__":
    main()
