"""The README's tables: the lent GPU's lora-fold-reverse (gpu_run/metrics.jsonl: its evals, verify-fold's layout at
window 48 on the 790 val rows) and its teacher-forced readings (read.sh: 80 long dev answers, windows 48-60, pooled
over the answers' four groups) beside the training-free default fold's and the CPU pilots' (60 steps from the same
start, experiments/2026-11-26-cpu-pure-kl/), then the decoded sampled long math of decode.sh beside the pilots' (and the
answers holding a token the base gives > 6 nats: the decoded spikes), and the arms' decoded worst tokens paired with
each other prompt by prompt (the same prompts and seeds; `hamburger.eval.paired.paired_bootstrap`, 95%); the same
for decode_more.sh's next 60 prompts, and over all 120.

    python experiments/2026-11-27-gpu-fold-reverse/summary.py > experiments/2026-11-27-gpu-fold-reverse/summary.txt
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).resolve().parent
PILOTS = HERE.parent / "2026-11-26-cpu-pure-kl"
_spec = importlib.util.spec_from_file_location("pilots_summary", PILOTS / "summary.py")
pilots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pilots)

GPU = "lora-fold-reverse (GPU, 286 steps)"
AFTER = "after (CPU pilot: mix10 + readers' adapters, GPU rates)"  # run.sh's ARM=after, session 32
READINGS = {**pilots.SAMPLING, AFTER: PILOTS / "reading-sampling-after.json", GPU: HERE / "reading-reverse.json"}
DECODES = {**pilots.DECODES, AFTER: PILOTS / "eval-t256-gsm8k-l60-after-w56",
           GPU: HERE / "eval-t256-gsm8k-l60-reverse-w56"}
DEFAULT = "training-free default fold, shipped model"
MORE = {DEFAULT: HERE / "eval-t256-gsm8k-more-default", "mix10": HERE / "eval-t256-gsm8k-more-mix10",
        GPU: HERE / "eval-t256-gsm8k-more-reverse"}


def training(run: Path, name: str, fields: tuple[str, ...] = ("token_loss_weight", "kl_weight", "kl_mix")) -> None:
    """A GPU run's settings and size, then its evals (``run``: its gpu_run folder, metrics.jsonl and config.json)."""
    rows = pilots.lines(run / "metrics.jsonl")
    config = json.loads((run / "config.json").read_text())
    print(f"{name}: " + ", ".join(f"{f} {config[f]}" for f in fields)
          + f", lr_base {config['lr_base']:g}, lr_grafted {config['lr_grafted']:g}, "
          f"{rows[-1]['step']} steps, {sum(r['response_tokens'] for r in rows if r.get('kind') == 'train'):,} "
          f"response tokens, {(rows[-1]['time'] - rows[0]['time']) / 60:.1f} min")
    print("\n| step | val next-token accuracy (window 48) | val KL term (reverse) |")
    print("|---|---|---|")
    for r in rows:
        if r.get("kind") == "eval":
            print(f"| {r['step']} | {100 * r['token_acc']:.2f}% | {r['kl']:.4f} |")


def main() -> None:
    training(HERE / "gpu_run", "lora-fold-reverse")
    print("\n| model | policy | flips % | spikes > 6 nats | KL | reverse KL | sampled NLL gap "
          "| sampled spikes (base's own) | KV at 128 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, policy, t, kv in pilots.pooled(READINGS):
        n = t["positions"]
        print(f"| {name} | {policy} | {100 * t['flips'] / n:.2f} | {t['spikes']} | {t['kl'] / n:.4f} | "
              f"{t['rkl'] / n:.4f} | {(t['sampled_nll'] - t['base_sampled_nll']) / n:+.4f} | "
              f"{t['sampled_spikes']:.1f} ({t['base_sampled_spikes']:.1f}) | {kv:.3f} |")
    print("\nThe 60 long GSM8K dev prompts of decode.sh:")
    first = decodes(DECODES)
    print("\nThe next 60 (decode_more.sh):")
    more = decodes(MORE)
    both = {name: {**first[name], **more[name]} for name in first.keys() & more.keys()}
    if both:
        print("\nBoth sets, 120 prompts:")
        paired(both)


def decodes(folders: dict[str, Path]) -> dict[str, dict[str, float]]:
    """The decoded table of the evals in ``folders`` that exist, then their worst tokens paired arm by arm; returns
    each arm's worst token by prompt."""
    print("\n| model | verify_fold (sampled) | tau | NLL per token vs base-sampled | worst-token NLL vs base-sampled "
          "| answers with a token > 6 nats (base-sampled's) |")
    print("|---|---|---|---|---|---|")
    present = {name: folder for name, folder in folders.items() if (folder / "summary.json").exists()}
    for name, folder in present.items():
        spikes = {}
        for r in pilots.lines(folder / "examples.jsonl"):
            spikes.setdefault(r["method"], []).append(r["worst_token_nll"] > 6)
        spiked = {m: f"{sum(v)} of {len(v)}" for m, v in spikes.items()}
        print(f"| {name} | {' | '.join(pilots.decoded(folder))} | {spiked['verify-fold-sampled']} "
              f"({spiked['base-sampled']}) |")
    worst = {name: worst_tokens(folder) for name, folder in present.items()}
    paired(worst)
    return worst


def paired(worst: dict[str, dict[str, float]]) -> None:
    print("\n| decoded worst token, paired by prompt | prompts | difference [95% interval] |")
    print("|---|---|---|")
    for a, b in ((GPU, DEFAULT), (GPU, "mix10"), ("mix10", DEFAULT), (AFTER, "mix10")):
        if a in worst and b in worst:
            ids = sorted(worst[a].keys() & worst[b].keys())
            point, lo, hi = paired_bootstrap([worst[a][i] for i in ids], [worst[b][i] for i in ids])
            print(f"| {a} - {b} | {len(ids)} | {point:+.3f} [{lo:+.3f}, {hi:+.3f}] |")

def worst_tokens(folder: Path) -> dict[str, float]:
    """Each prompt's worst-token NLL under the base in a sampled verify_fold eval."""
    return {r["id"]: r["worst_token_nll"] for r in pilots.lines(folder / "examples.jsonl")
            if r["method"] == "verify-fold-sampled"}


if __name__ == "__main__":
    main()
