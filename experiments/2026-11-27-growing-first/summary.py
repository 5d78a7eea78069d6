"""The README's tables: each arm of run.sh, sampled on long GSM8K dev math (256 tokens), against the base's sampled
answers and paired prompt by prompt with the default fold (`hamburger.eval.paired.paired_bootstrap`, 95%): stage 1
over dev rows 0-119, stage 2 over rows 120-239; then stage 3's greedy runs and the speed runs (speed_t*.json).

    python experiments/2026-11-27-growing-first/summary.py > experiments/2026-11-27-growing-first/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).resolve().parent
STAGES = {"stage 1: dev rows 0-119": ("rows0-60", "rows60-120"), "stage 2: dev rows 120-239": ("rows120-240",)}
METRICS = ("worst_token_nll", "nll_per_token", "rep4")


def records(folder: Path) -> dict[str, dict[str, dict]]:
    """method -> prompt id -> record of one eval."""
    out: dict[str, dict[str, dict]] = {}
    for line in (folder / "examples.jsonl").read_text().splitlines():
        r = json.loads(line)
        out.setdefault(r["method"], {})[r["id"]] = r
    return out


def arm(parts: tuple[str, ...], name: str) -> dict[str, dict[str, dict]] | None:
    """The arm's records over a stage's runs (None unless every run exists)."""
    folders = [HERE / f"eval-{part}-{name}" for part in parts]
    if not all((f / "summary.json").exists() for f in folders):
        return None
    merged: dict[str, dict[str, dict]] = {}
    for f in folders:
        for method, rows in records(f).items():
            merged.setdefault(method, {}).update(rows)
    return merged


def diff(a: dict[str, dict], b: dict[str, dict], metric: str) -> str:
    ids = sorted(a.keys() & b.keys())
    point, lo, hi = paired_bootstrap([a[i][metric] for i in ids], [b[i][metric] for i in ids])
    return f"{point:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def sampled_row(name: str, got: dict[str, dict[str, dict]], reference: dict[str, dict] | None) -> str:
    """A table row of one arm's sampled verify_fold: tau, the answers' KV, spikes, each metric against base-sampled,
    and the first two paired with ``reference`` (another arm's sampled records; None: "-")."""
    fold, base = got["verify-fold-sampled"], got["base-sampled"]
    tau = sum(r["tokens"] for r in fold.values()) / sum(r["forwards"] for r in fold.values())
    kv = sum(r["kv_slots"] - r["kv_slots_ordinary"] + r["tokens"] - 1 for r in fold.values()) / \
        sum(r["tokens"] - 1 for r in fold.values())  # the answers' slots at their end (eval's answers' KV)
    spikes = f"{sum(r['worst_token_nll'] > 6 for r in fold.values())} " \
             f"({sum(r['worst_token_nll'] > 6 for r in base.values())})"
    against = [diff(fold, base, m) for m in METRICS]
    paired = [diff(fold, reference, m) if reference is not None else "-" for m in METRICS[:2]]
    return f"| {name} | {len(fold)} | {tau:.2f} | {kv:.3f} | {spikes} | " + " | ".join(against + paired) + " |"


def main() -> None:
    for stage, parts in STAGES.items():
        arms = {name: got for name in ("default", "s45", "s35") if (got := arm(parts, name)) is not None}
        if not arms:
            continue
        print(f"\n## {stage}, sampled verify_fold (T 0.7, top-p 0.9), 256 tokens\n")
        print("| arm | prompts | tau | answers' KV at their end | answers with a token > 6 nats (base-sampled's) | "
              + " | ".join(f"{m} - base-sampled" for m in METRICS) + " | " + " | ".join(
                  f"{m} - default" for m in METRICS[:2]) + " |")
        print("|---|---|---|---|---|" + "---|" * (len(METRICS) + 2))
        for name, got in arms.items():
            print(sampled_row(name, got, arms["default"]["verify-fold-sampled"] if name != "default" else None))
    for path in sorted(HERE.glob("eval-greedy-*/summary.md")):
        print(f"\n## {path.parent.name} (greedy; the base's answers reused)\n")
        text = path.read_text()
        print(text[text.index("| task | method | examples"):text.index("\n\n", text.index("| task | method | ex"))])
        print()
        print(text[text.index("| task | method | metric"):].strip())
    print("\n## Speed, 8 chat + 8 GSM8K dev prompts, greedy, batch 1, fp32, 2 threads (all prompts)\n")
    print("| run | new tokens | CPU | MKL_CBWR | method | decode tok/s | vs HF generate | tokens per forward "
          "| answers' KV |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(HERE.glob("speed_t*.json")):
        run = json.loads(path.read_text())
        machine, tokens = run["machine"], run["settings"]["max_new_tokens"]
        for s in run["summary"]:
            if s["category"] == "all":
                print(f"| {path.stem} | {tokens} | {machine['cpu']} | {machine['env']['MKL_CBWR']} | {s['method']} | "
                      f"{s['decode_tok_s']:.1f} | {s['speedup_vs_hf']:.2f}x | {s['tokens_per_forward']:.2f} | "
                      f"{s.get('kv_ratio_answer', 1.0):.3f} |")


if __name__ == "__main__":
    main()
