"""The README's tables: each arm's evals (start, end; verify-fold layout at window 48, 100 val rows) from
ARM/metrics.jsonl beside session 30's kl2 arm (CE + 2 x KL, experiments/2026-11-26-cpu-fold-kl/), and the teacher-forced
readings of read.sh (reading-ARM.json: 80 long dev answers, `segments:48:p=0.7`) beside kl2's and the training-free
default fold's (experiments/2026-11-26-fold-policies/).

    python experiments/2026-11-26-cpu-pure-kl/summary.py > experiments/2026-11-26-cpu-pure-kl/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
KL2 = HERE.parent / "2026-11-26-cpu-fold-kl"
ARMS = {"kl2 (session 30)": KL2 / "kl2", **{arm: HERE / arm for arm in ("pure", "pure-lr4", "mix05", "mix10")}}
READINGS = {"training-free default fold (any model)": HERE.parent / "2026-11-26-fold-policies" /
            "reading-default-keep-60.json", "start (lora-verify-fold)": KL2 / "reading-start.json",
            "kl2 (session 30)": KL2 / "reading-kl2.json", "pure": HERE / "reading-pure.json",
            "pure-lr4": HERE / "reading-pure-lr4.json", "pure, windows 52 and 56": HERE / "reading-pure-windows.json"}


SAMPLING = {"training-free default fold, shipped model": HERE / "reading-sampling-default.json",
            "pure": HERE / "reading-sampling-pure.json", "mix05": HERE / "reading-sampling-mix05.json",
            "mix10": HERE / "reading-sampling-mix10.json"}
DECODES = {"training-free default fold, shipped model": HERE.parent / "2026-11-26-sampled-fold" /
           "eval-dev-t256-gsm8k-l60", "pure": HERE / "eval-t256-gsm8k-l60-pure-w56",
           "mix05": HERE / "eval-t256-gsm8k-l60-mix05-w56",
           "mix10": HERE / "eval-t256-gsm8k-l60-mix10-w56"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def pooled(readings: dict[str, Path]):
    """(model name, policy, counts summed over the 80 answers' four groups, KV at 128) of every reading file present."""
    for name, path in readings.items():
        for policy, stats in json.loads(path.read_text()).items() if path.exists() else ():
            t = {k: sum(s[k] for s in stats.values()) for k in next(iter(stats.values()))}
            yield name, policy, t, t["slots_128"] / (128 * t["answers_128"])


def decoded(folder: Path) -> list[str]:
    """A sampled verify_fold eval's cells: its folding, tau, and its NLL-per-token and worst-token differences from
    base-sampled with their intervals."""
    d = json.loads((folder / "summary.json").read_text())
    tau = next(r["tau"] for r in d["summary"] if r["method"] == "verify-fold-sampled")
    bands = {c["band"]["metric"]: c for c in d["comparisons"] if c["method"] == "verify-fold-sampled"}
    cells = [f"{bands[m]['diff']:+.3f} [{bands[m]['lo']:+.3f}, {bands[m]['hi']:+.3f}]"
             for m in ("nll_per_token", "worst_token_nll")]
    return [d["meta"]["verify_fold"], f"{tau:.2f}", *cells]


def main() -> None:
    print("| arm | token_loss_weight | kl_weight | kl_mix | lr_base / lr_grafted | step | W48 next-token accuracy "
          "| W48 KL term (kl_mix > 0: the mixed divergence) |")
    print("|---|---|---|---|---|---|---|---|")
    for arm, folder in ARMS.items():
        if not (folder / "metrics.jsonl").exists():
            continue
        c = json.loads((folder / "config.json").read_text())
        for r in lines(folder / "metrics.jsonl"):
            if r.get("kind") == "eval":
                print(f"| {arm} | {c.get('token_loss_weight', 1.0)} | {c['kl_weight']} | {c.get('kl_mix', 0.0)} | "
                      f"{c['lr_base']:g} / "
                      f"{c['lr_grafted']:g} | {r['step']} | {100 * r['token_acc']:.1f}% | {r['kl']:.4f} |")
    for arm, folder in ARMS.items():
        if (folder / "metrics.jsonl").exists():
            rows = lines(folder / "metrics.jsonl")
            tokens = sum(r["response_tokens"] for r in rows if r.get("kind") == "train")
            print(f"\n{arm}: {rows[-1]['step']} steps, {tokens:,} response tokens, "
                  f"{(rows[-1]['time'] - rows[0]['time']) / 60:.0f} min from its start line to its last line", end="")
    print("\n\n| model | policy | flips % | spikes > 6 nats | KL mean | KV at 128 |")
    print("|---|---|---|---|---|---|")
    for name, policy, t, kv in pooled(READINGS):
        print(f"| {name} | {policy} | {100 * t['flips'] / t['positions']:.2f} | {t['spikes']} | "
              f"{t['kl'] / t['positions']:.4f} | {kv:.3f} |")
    print("\n| model | policy | KL | reverse KL | sampled NLL gap | sampled spikes (base's own) | KV at 128 |")
    print("|---|---|---|---|---|---|---|")
    for name, policy, t, kv in pooled(SAMPLING):
        n = t["positions"]
        print(f"| {name} | {policy} | {t['kl'] / n:.4f} | {t['rkl'] / n:.4f} | "
              f"{(t['sampled_nll'] - t['base_sampled_nll']) / n:+.4f} | {t['sampled_spikes']:.1f} "
              f"({t['base_sampled_spikes']:.1f}) | {kv:.3f} |")
    print("\n| model | verify_fold (sampled) | tau | NLL per token vs base-sampled | worst-token NLL vs base-sampled |")
    print("|---|---|---|---|---|")
    for name, folder in DECODES.items():
        if (folder / "summary.json").exists():
            print(f"| {name} | {' | '.join(decoded(folder))} |")


if __name__ == "__main__":
    main()
