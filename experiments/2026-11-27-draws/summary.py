"""The README's tables: run.sh's arms (sampled verify_fold, 256 tokens, dev GSM8K rows 0-119, three draws per prompt)
against the base's sampled answers (three draws, the same seeds) and paired with the default fold s45, each prompt
counted once as the mean over its draws (`hamburger.eval.paired.by_prompt`, `draw_mean`, `paired_bootstrap`, 95%);
then each draw alone, the spread a one-draw comparison carries; then s45's draw 0 against session 38's decodes of the
same prompts and seeds (../2026-11-27-kv-budget/, s45now).

    python experiments/2026-11-27-draws/summary.py > experiments/2026-11-27-draws/summary.txt
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hamburger.eval.paired import by_prompt, draw_mean, paired_bootstrap

HERE = Path(__file__).resolve().parent
PARTS = ("rows0-60", "rows60-120")
ARMS = {"s45": "the default fold, `segments:60:0.45:first:steps=8:p=0.7`",
        "kv65": "s45 with a KV budget, `...:kv=0.65`",
        "w128": "a 128-token window, `segments:128:first:steps=8:p=0.7`",
        "kf-lora": "s45 read by a base trained on it (session 40, ../2026-11-27-keep-fold-full/, arm lora)",
        "af-warm": "s45 read by the same line's adapters from the first fold on only (session 41, its warm start at "
                   "`lora_scope: after_fold`)",
        "af-train": "af-warm trained on under that scope (session 41, ../2026-11-27-keep-fold-full/, arm after-fold)",
        "kf-gpu": "af-warm's recipe trained on a GPU at ~15x its tokens (session 49, "
                  "../2026-11-28-gpu-keep-fold-after/)"}
FRESH = {"s45": ARMS["s45"],  # (the arms decoded on dev rows 120-239 too)
         "af-reader": "the default model with af-warm as its fold reader (session 43, ../2026-11-27-keep-fold-full/)",
         "offtop": "af-reader with off-top tokens kept in their slots, `...:offtop` (session 44, ../2026-11-28-offtop/)",
         "sr": "the default model with a reader trained on the base's sampled answers (session 44, "
               "../2026-11-28-sampled-reader/)",
         "fkl": "sr trained by forward KL only, `kl_mix 0` (session 45, ../2026-11-28-sampled-reader/)",
         "rkl": "sr trained by reverse KL only, `kl_mix 1` (session 45, ../2026-11-28-sampled-reader/)",
         "af-kv65": "af-reader with the KV budget `...:kv=0.65` (session 45, a curve point)",
         "guard-t05": "af-reader with folded rows drawing at T 0.5 (session 46, ../2026-11-28-tail-guard/, a curve "
                      "point)",
         "guard-t06": "af-reader with folded rows drawing at T 0.6 (session 46, ../2026-11-28-tail-guard/)",
         "content65": "af-kv65 with the answer's own copy sources leaving last (session 47, ../2026-11-28-copy-keep/)",
         "op": "the default model with a reader trained on its own sampled answers (session 47, "
               "../2026-11-28-on-policy/)",
         "fh4": "af-reader with four full key/value heads (session 48, ../2026-11-28-full-heads/; KV as a cache "
                "holding every slot for those heads would)",
         "af-kv59": "af-reader with the KV budget `...:kv=0.59`, fh4's expected KV (session 48, its control)",
         "fh4-base": "fh4 read by the base, no fold reader (session 48)",
         "kf-gpu": ARMS["kf-gpu"]}
FULL_HEADS = {"fh4": 4, "fh4-base": 4}  # arms whose chosen heads keep every slot (../2026-11-28-full-heads/heads.py)
KV_HEADS = 30 * 3  # the base's layers x key/value heads (SmolLM2-135M)
METRICS = ("worst_token_nll", "nll_per_token", "rep4")
SPIKE = 6.0  # nats: a token the base gives < 0.25%
FOLD, BASE = "verify-fold-sampled", "base-sampled"


def arm(name: str, folder: Path = HERE) -> list[dict] | None:
    """The records of an arm's runs over dev rows 0-119 (None unless both exist)."""
    runs = [folder / f"eval-{part}-{name}" for part in PARTS]
    if not all((run / "summary.json").exists() for run in runs):
        return None
    return [json.loads(line) for run in runs for line in (run / "examples.jsonl").read_text().splitlines()]


def diff(a: dict[str, list[dict]], b: dict[str, list[dict]], metric: str) -> str:
    """mean(a) - mean(b) over the prompts both hold, each prompt's draws averaged, with its 95% interval."""
    ids = sorted(a.keys() & b.keys())
    point, lo, hi = paired_bootstrap([draw_mean(a[i], metric) for i in ids], [draw_mean(b[i], metric) for i in ids])
    return f"{point:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def only(rows: dict[str, list[dict]], draw: int) -> dict[str, list[dict]]:
    return {i: [r for r in draws if r.get("draw", 0) == draw] for i, draws in rows.items()}


def arm_row(label: str, got: dict, reference: dict | None, full_heads: int = 0) -> str:
    """A table row of one arm (by_prompt records): tau, the answers' KV, spikes per draw, each metric against
    base-sampled, and the first two paired with ``reference`` (another arm's sampled records; None: "-").
    ``full_heads``: that many of the `KV_HEADS` keep every answer slot (the records count the folded heads' slots)."""
    fold, base = got[FOLD], got[BASE]
    rows = [r for draws in fold.values() for r in draws]
    draws = len(rows) // len(fold)
    tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
    kv = sum(r["kv_slots"] - r["kv_slots_ordinary"] + r["tokens"] - 1 for r in rows) / \
        sum(r["tokens"] - 1 for r in rows)  # the answers' slots at their end (eval's answers' KV)
    kv += full_heads / KV_HEADS * (1 - kv)
    spikes = [sum(r["worst_token_nll"] > SPIKE for d in g.values() for r in d) / draws for g in (fold, base)]
    paired = [diff(fold, reference, m) if reference is not None else "-" for m in METRICS[:2]]
    return (f"| {label} | {len(fold)} x {draws} | {tau:.2f} | {kv:.3f} | {spikes[0]:.1f} ({spikes[1]:.1f}) | "
            + " | ".join([diff(fold, base, m) for m in METRICS] + paired) + " |")


HEADER = ("| arm | prompts x draws | tau | answers' KV at their end | answers > 6 nats per draw (base-sampled's) | "
          + " | ".join(f"{m} - base-sampled" for m in METRICS) + " | "
          + " | ".join(f"{m} - s45" for m in METRICS[:2]) + " |\n|---|---|---|---|---|" + "---|" * (len(METRICS) + 2))


def main() -> None:
    arms = {name: by_prompt(got, task_of=None) for name in ARMS if (got := arm(name)) is not None}
    print("## Three draws per prompt: sampled verify_fold (T 0.7, top-p 0.9), 256 tokens, dev GSM8K rows 0-119\n")
    print(HEADER)
    for name, got in arms.items():
        print(arm_row(f"{name}: {ARMS[name]}", got, arms["s45"][FOLD] if name != "s45" else None))
    for name in ("af-warm", "af-train"):  # (session 41: the scope's cost, paired with the adapters at every slot)
        if name in arms and "kf-lora" in arms:
            print(f"\n{name} - kf-lora, paired: " + ", ".join(
                f"{m} {diff(arms[name][FOLD], arms['kf-lora'][FOLD], m)}" for m in METRICS[:2]))
    if "kf-gpu" in arms and "af-warm" in arms:  # (session 49: the GPU reader against the shipped reader's adapters)
        print("\nkf-gpu - af-warm, paired: " + ", ".join(
            f"{m} {diff(arms['kf-gpu'][FOLD], arms['af-warm'][FOLD], m)}" for m in METRICS))
    fresh = {name: by_prompt([json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()],
                             task_of=None)
             for name in FRESH if ((run := HERE / f"eval-rows120-240-{name}") / "summary.json").exists()}
    if fresh:
        print("\n## Fresh dev rows 120-239 (after the result above), three draws\n")
        print(HEADER)
        for name, got in fresh.items():
            print(arm_row(f"{name}: {FRESH[name]}", got, fresh["s45"][FOLD] if name != "s45" else None,
                          FULL_HEADS.get(name, 0)))
        # (sessions 44-46: paired with the default model's reading)
        for name in ("offtop", "sr", "fkl", "rkl", "af-kv65", "guard-t05", "guard-t06", "content65", "op",
                     "fh4", "af-kv59", "kf-gpu"):
            if name in fresh and "af-reader" in fresh:
                print(f"\n{name} - af-reader, paired: " + ", ".join(
                    f"{m} {diff(fresh[name][FOLD], fresh['af-reader'][FOLD], m)}" for m in METRICS))
                pairs = [(a["text"], b["text"]) for i in fresh[name][FOLD]
                         for a, b in zip(fresh[name][FOLD][i], fresh["af-reader"][FOLD][i])]
                shared = sorted(len(os.path.commonprefix(pair)) for pair in pairs)
                print(f"({name}: answers sharing af-reader's text up to the first fold, same seeds: common prefix "
                      f"median {shared[len(shared) // 2]} characters, shortest {shared[0]})")
        for name in ("guard-t05", "guard-t06", "fh4", "kf-gpu"):  # (sessions 46, 48, 49: the repetition
            # bar: base greedy)
            if name in fresh:
                print(f"\n{name} - base (greedy), paired: rep4 {diff(fresh[name][FOLD], fresh[name]['base'], 'rep4')}")
        if "content65" in fresh and "af-kv65" in fresh:  # (session 47: at the same KV budget)
            print("\ncontent65 - af-kv65, paired: " + ", ".join(
                f"{m} {diff(fresh['content65'][FOLD], fresh['af-kv65'][FOLD], m)}" for m in METRICS))
        if "fh4" in fresh and "af-kv59" in fresh:  # (session 48: the same KV spent on the newest groups)
            print("\nfh4 - af-kv59, paired: " + ", ".join(
                f"{m} {diff(fresh['fh4'][FOLD], fresh['af-kv59'][FOLD], m)}" for m in METRICS))
        if "fh4-base" in fresh and "fh4" in fresh:  # (session 49: what the fold reader adds with full heads)
            print("\nfh4-base - fh4, paired: " + ", ".join(
                f"{m} {diff(fresh['fh4-base'][FOLD], fresh['fh4'][FOLD], m)}" for m in METRICS))
        for name in ("fkl", "rkl", "op"):  # (session 45: the KL's direction alone, the same rows, order and seeds;
            # session 47: op, the same prompts answered by the fold instead of the base)
            if name in fresh and "sr" in fresh:
                print(f"\n{name} - sr, paired: " + ", ".join(
                    f"{m} {diff(fresh[name][FOLD], fresh['sr'][FOLD], m)}" for m in METRICS))
    print("\n## Each draw alone (worst-token NLL - base-sampled's same draw; the arms against s45's same draw)\n")
    print("| arm | " + " | ".join(f"draw {k}" for k in range(3)) + " |")
    print("|---|---|---|---|")
    for name, got in arms.items():
        cells = [diff(only(got[FOLD], k), only(got[BASE], k), "worst_token_nll") for k in range(3)]
        print(f"| {name} - base-sampled | " + " | ".join(cells) + " |")
        if name != "s45":
            cells = [diff(only(got[FOLD], k), only(arms["s45"][FOLD], k), "worst_token_nll") for k in range(3)]
            print(f"| {name} - s45 | " + " | ".join(cells) + " |")
    base = arms["s45"][BASE]
    print("\n| base-sampled draw k - draw 0 | " + " | ".join(
        diff(only(base, k), only(base, 0), "worst_token_nll") for k in (1, 2)) + " |\n|---|---|---|")
    before = by_prompt(arm("s45now", HERE.parent / "2026-11-27-kv-budget"), task_of=None)[FOLD]
    now = only(arms["s45"][FOLD], 0)
    same = sum(now[i][0]["text"] == before[i][0]["text"] for i in now)
    print(f"\ns45 draw 0 (this run) against session 38's s45now (same prompts, seeds and settings): {same} of "
          f"{len(now)} answers identical")


if __name__ == "__main__":
    main()
