"""The README's tables: the lent GPU's lora-fold-after (gpu_run/metrics.jsonl: its evals, verify-fold's layout at
window 48 on the 790 val rows), then its decoded sampled long math (decode.sh) beside session 32's arms on the same
120 prompts, seeds and base-sampled answers (../2026-11-27-gpu-fold-reverse/: the training-free default fold, the CPU
pilot mix10, the GPU's lora-fold-reverse; ../2026-11-27-growing-first/: s45, the default since), and its worst
tokens paired prompt by prompt with theirs (`hamburger.eval.paired.paired_bootstrap`, 95%), on each set of 60 and over
all 120.

    python experiments/2026-11-27-gpu-fold-after/summary.py > experiments/2026-11-27-gpu-fold-after/summary.txt
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hamburger.eval.paired import paired_bootstrap

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("reverse_summary", HERE.parent / "2026-11-27-gpu-fold-reverse" /
                                               "summary.py")
reverse = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reverse)

AFTER = "lora-fold-after (GPU, 286 steps)"
GROWING = HERE.parent / "2026-11-27-growing-first"  # session 33's s45, DEFAULT_FOLD since: the same prompts and seeds
S45 = "training-free growing fold s45 (the default since session 33)"
SETS = {
    "the first 60 (decode.sh of session 32)": {**{k: reverse.DECODES[k] for k in (reverse.DEFAULT, "mix10",
                                                                                   reverse.GPU)},
                                                S45: GROWING / "eval-rows0-60-s45",
                                                AFTER: HERE / "eval-t256-gsm8k-l60-after"},
    "the next 60 (decode_more.sh of session 32)": {**reverse.MORE, S45: GROWING / "eval-rows60-120-s45",
                                                   AFTER: HERE / "eval-t256-gsm8k-more-after"},
}


def main() -> None:
    reverse.training(HERE / "gpu_run", "lora-fold-after",
                     ("lora_scope", "token_loss_weight", "kl_weight", "kl_mix"))
    worst: dict[str, dict[str, float]] = {}
    for title, folders in SETS.items():
        print(f"\nSampled verify_fold on {title}:")
        print("\n| model | verify_fold (sampled) | tau | NLL per token vs base-sampled "
              "| worst-token NLL vs base-sampled | answers with a token > 6 nats (base-sampled's) |")
        print("|---|---|---|---|---|---|")
        present = {name: folder for name, folder in folders.items() if (folder / "summary.json").exists()}
        for name, folder in present.items():
            spikes: dict[str, list[bool]] = {}
            for r in reverse.pilots.lines(folder / "examples.jsonl"):
                spikes.setdefault(r["method"], []).append(r["worst_token_nll"] > 6)
            spiked = {m: f"{sum(v)} of {len(v)}" for m, v in spikes.items()}
            print(f"| {name} | {' | '.join(reverse.pilots.decoded(folder))} | {spiked['verify-fold-sampled']} "
                  f"({spiked['base-sampled']}) |")
        by_arm = {name: reverse.worst_tokens(folder) for name, folder in present.items()}
        paired(by_arm)
        for name, values in by_arm.items():
            worst.setdefault(name, {}).update(values)
    print("\nBoth sets, 120 prompts:")
    paired(worst)


def paired(worst: dict[str, dict[str, float]]) -> None:
    print("\n| decoded worst token, paired by prompt | prompts | difference [95% interval] |")
    print("|---|---|---|")
    for other in (reverse.DEFAULT, "mix10", reverse.GPU, S45):
        if AFTER in worst and other in worst:
            ids = sorted(worst[AFTER].keys() & worst[other].keys())
            point, lo, hi = paired_bootstrap([worst[AFTER][i] for i in ids], [worst[other][i] for i in ids])
            print(f"| {AFTER} - {other} | {len(ids)} | {point:+.3f} [{lo:+.3f}, {hi:+.3f}] |")


if __name__ == "__main__":
    main()
