"""README's tables for the candidate (`prompt=4`): check 3 (speed.json), check 1 (greedy, 120 dev GSM8K prompts,
96 tokens, paired with the default's run on them, `../2026-11-29-rotated-store/greedy120-kv84`), IFEval (541
prompts, paired with the base and the default's run, `../2026-11-29-rotated-store/eval-ifeval-kv84-n541`) and check 2
(the 103 chat dev prompts, three draws, paired with the base's samples and the default's draws,
`../2026-11-29-rotated-store/eval-chat360-463`). KV here is the whole history's, prompt included: the records'
`kv_slots` (whole-slot equivalents) over `kv_slots_ordinary`, pooled. 95% paired bootstrap over prompts, each
prompt's draws averaged; a check whose run has not finished is said so.

    python experiments/2026-11-29-prompt-store/summary.py > experiments/2026-11-29-prompt-store/summary.txt
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE.parent / "2026-11-29-rotated-store"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


session54 = _load("summary_54", DEFAULT / "summary.py")  # (its helpers: sessions 48, 52 and 53's)
ifeval53 = _load("ifeval_summary_53", HERE.parent / "2026-11-29-default-bits/ifeval_summary.py")
BASE, FOLD, METRICS, SPIKE, diff, records = (session54.BASE, session54.FOLD, session54.METRICS, session54.SPIKE,
                                             session54.diff, session54.records)
GREEDY_FOLD = session54.GREEDY_FOLD


def history_kv(rows: list[dict]) -> float:
    """The whole history's KV, prompt included: whole-slot equivalents held over an ordinary cache's, pooled."""
    return sum(r["kv_slots"] for r in rows) / sum(r["kv_slots_ordinary"] for r in rows)


def flat(arm: dict) -> list[dict]:
    return [r for draws in arm.values() for r in draws]


def speed() -> None:
    path = HERE / "speed.json"
    if not path.exists():
        print("check 3: speed.json has not been written\n")
        return
    result = json.loads(path.read_text())
    rows = {s["method"]: s for s in result["summary"] if s["category"] == "all"}
    hf = rows["hf_generate"]
    print("## Check 3: greedy, batch 1, 4 bench prompts (one per category), 256 tokens\n")
    print("| method | decode tok/s | vs HF | tau | KV bytes per output token (of HF's) |\n|---|---|---|---|---|")
    for name, s in rows.items():
        print(f"| {name} | {s['decode_tok_s']:.1f} | {s['speedup_vs_hf']:.2f}x | {s['tau']:.2f} | "
              f"{s['kv_bytes_per_token']:,.0f} ({s['kv_bytes_per_token'] / hf['kv_bytes_per_token']:.2f}) |")
    held = {}
    for r in result["rows"]:
        held.setdefault(r["method"], {})[r["category"]] = r["kv_bytes"]
    print("\nThe bench's KV bytes per output token take the prompt's bytes at an ordinary cache's size off the cache's "
          "bytes; with the prompt stored that is below 0 on some prompts (left out), so the rule's KV is the whole "
          "history's: the cache's measured bytes at the answer's end, prompt included, against HF's:")
    for name, by_category in held.items():
        print(f"- {name}: {sum(by_category.values()) / sum(held['hf_generate'].values()):.2f} pooled; " + ", ".join(
            f"{c} {b / held['hf_generate'][c]:.2f}" for c, b in sorted(by_category.items())))
    by = {(s["category"], s["method"]): s for s in result["summary"]}
    cats = sorted({c for c, _ in by if c != "all"})
    print(f"\nby category ({', '.join(cats)}), vs HF:")
    for name in rows:
        print(f"- {name}: " + " / ".join(f"{by[(c, name)]['speedup_vs_hf']:.2f}x" for c in cats))
    reads = [[(r["tokens"], r["matched_prefix"]) for r in result["rows"] if r["method"] == m]
             for m in ("verify_fold", "verify_fold+session54_read")]
    print(f"\nthe lean read and session 54's: the same tokens and prefixes matching HF's on every prompt: "
          f"{reads[0] == reads[1]}\n")


def greedy() -> None:
    got, default = records(HERE / "greedy120-prompt4"), records(DEFAULT / "greedy120-kv84")
    if got is None:
        print("check 1: greedy120-prompt4 has not finished\n")
        return
    fold, base, other = got[GREEDY_FOLD], got["base"], default[GREEDY_FOLD]
    print("## Check 1: greedy, the first 120 dev GSM8K prompts, 96 tokens\n")
    print("| arm | answers the base's own text | rep4 - base (greedy) | nll_per_token - base-sampled "
          "| worst_token_nll - base-sampled | history KV, prompt included |\n|---|---|---|---|---|---|")
    for name, arm in (("the candidate (prompt=4)", fold), ("the default", other)):
        same = sum(arm[i][0]["text"] == base[i][0]["text"] for i in arm)
        print(f"| {name} | {same} of {len(arm)} | {diff(arm, base, 'rep4')} | {diff(arm, got[BASE], 'nll_per_token')}"
              f" | {diff(arm, got[BASE], 'worst_token_nll')} | {history_kv(flat(arm)):.3f} |")
    print(f"\nthe candidate - the default: " + ", ".join(f"{m} {diff(fold, other, m)}" for m in METRICS)
          + "\n")


def ifeval() -> None:
    run = HERE / "eval-ifeval-prompt4-n541"
    if not (run / "summary.json").exists():
        print("IFEval: eval-ifeval-prompt4-n541 has not finished\n")
        return
    got, default = ifeval53.answers(run), ifeval53.answers(DEFAULT / "eval-ifeval-kv84-n541")
    fold, base, other = got[ifeval53.FOLD], got["base"], default[ifeval53.FOLD]
    print("## IFEval: 541 prompts, greedy, 128 tokens\n")
    for name, arm in (("the candidate (prompt=4)", fold), ("the default", other)):
        rows = list(arm.values())
        weights = sum(r["instructions"] for r in rows)
        strict = 100 * sum(r["inst_strict"] * r["instructions"] for r in rows) / weights
        tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
        print(f"{name}: {len(rows)} prompts, tau {tau:.2f}, instruction-level strict {strict:.1f}; history KV, prompt "
              f"included, {history_kv(rows):.3f}; answers' KV {ifeval53.kv_share(rows):.3f}")
        for metric in ("inst_strict", "inst_loose"):
            print(f"  {metric} - base: {ifeval53.diff(arm, base, metric)}")
    for metric in ("inst_strict", "inst_loose"):
        print(f"the candidate - the default, {metric}: {ifeval53.diff(fold, other, metric)}")
    print()


def chat() -> None:
    got, default = records(HERE / "eval-chat360-463-prompt4"), records(DEFAULT / "eval-chat360-463")
    if got is None:
        print("check 2: eval-chat360-463-prompt4 has not finished\n")
        return
    fold, base, other = got[FOLD], got[BASE], default[FOLD]
    print("## Check 2: chat dev prompts 360-462, three draws, 256 tokens, sampled T 0.7 top-p 0.9\n")
    print("| arm | tau | history KV, prompt included | answers > 6 nats per draw | "
          + " | ".join(f"{m} - base-sampled" for m in METRICS) + " | rep4 - base (greedy) |")
    print("|---|---|---|---|" + "---|" * (len(METRICS) + 1))
    for name, arm in (("the candidate (prompt=4)", fold), ("the default", other)):
        rows = flat(arm)
        draws = len(rows) // len(arm)
        tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
        spikes = sum(r["worst_token_nll"] > SPIKE for r in rows) / draws
        cells = [diff(arm, base, m) for m in METRICS] + [diff(arm, got["base"], "rep4")]
        print(f"| {name} | {tau:.2f} | {history_kv(rows):.3f} | {spikes:.1f} | " + " | ".join(cells) + " |")
    print(f"\nthe candidate - the default (paired by prompt): "
          + ", ".join(f"{m} {diff(fold, other, m)}" for m in METRICS) + "\n")


if __name__ == "__main__":
    speed()
    greedy()
    ifeval()
    chat()
