"""The tables of this folder's README from its raw results: speed (benchmarks/verify_bench.py JSON) per method and
category, and the quality bands (`hamburger eval` summary.json) of each eval folder, beside last session's verify-fold
eval without lookup (experiments/2026-11-25-verify-fold/eval-*-segments-*).

    python experiments/2026-11-26-verify-speed/summary.py > experiments/2026-11-26-verify-speed/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
EARLIER = HERE.parent / "2026-11-25-verify-fold"


def speed_table(path: Path) -> None:
    result = json.loads(path.read_text())
    machine = result["machine"]
    print(f"\n### {path.name}: {result['model']['checkpoint']}, {result['settings']['n_chat']} chat + "
          f"{result['settings']['n_math']} GSM8K dev prompts, {result['settings']['max_new_tokens']} tokens, "
          f"{result['settings']['repeats']} repeat(s), {machine.get('threads')} threads, "
          f"torch {machine.get('torch')}\n")
    print("| method | category | decode tok/s | vs HF generate | tokens per forward | answers' KV | identical to HF | "
          "lookup steps | drafts kept per lookup step |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in result["summary"]:
        lookup = (f"{e['lookup_steps']:.2f} | {e['lookup_kept_per_step']:.2f}" if "lookup_steps" in e else " | ")
        print(f"| {e['method']} | {e['category']} | {e['decode_tok_s']:.1f} | {e['speedup_vs_hf']:.2f}x | "
              f"{e['tokens_per_forward']:.2f} | {e.get('kv_ratio_answer', 1.0):.3f} | {e['identical_to_hf']:.2f} | "
              f"{lookup} |")


def speed_section(folder: Path) -> None:
    """Every speed run of ``folder`` (its speed_*.json), under one heading."""
    print("\n## Speed")
    for path in sorted(folder.glob("speed_*.json")):
        speed_table(path)


def bands_table(folders: list[Path]) -> None:
    print("\n### Quality bands (paired with the base; 95% bootstrap intervals over prompts)\n")
    print("| eval | task | method | tau | metric vs reference (band) | diff | 95% CI | point in band | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for folder in folders:
        path = folder / "summary.json"
        if not path.exists():
            continue
        result = json.loads(path.read_text())
        tau = {(s["task"], s["method"]): s["tau"] for s in result["summary"]}
        for c in result["comparisons"]:
            print(f"| {folder.parent.name}/{folder.name} | {c['task']} | {c['method']} | "
                  f"{tau[(c['task'], c['method'])]:.2f} | {c['band_text']} | {c['diff']:+.3f} | [{c['lo']:+.3f}, {c['hi']:+.3f}] | "
                  f"{'yes' if c['point_inside'] else 'no'} | {c['verdict']} |")


def main() -> None:
    print("## Speed")
    for path in sorted(HERE.glob("speed_*.json")):
        speed_table(path)
    folders = sorted(HERE.glob("eval-*/")) + sorted(EARLIER.glob("eval-*-segments-*/"))
    bands_table([f for f in folders if f.is_dir()])


if __name__ == "__main__":
    main()
