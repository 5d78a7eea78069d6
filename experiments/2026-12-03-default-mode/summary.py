"""README's tables: check 1 (the shipped fold sampled on dev GSM8K rows 360-479, three draws, 256 tokens, against the
base's sampled and greedy answers; `../2026-11-29-default-math/`'s arm beside it, session 54's fold) and check 2
(`hamburger bench`, HF `generate`, verify and verify_fold at 128 and 256 tokens), with the rule's verdict.

    python experiments/2026-12-03-default-mode/summary.py > experiments/2026-12-03-default-mode/summary.txt
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


_spec = importlib.util.spec_from_file_location("summary_55", HERE.parent / "2026-11-29-prompt-store/summary.py")
session55 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(session55)
session52 = session55._load("summary_52", HERE.parent / "2026-11-29-quantized-history/summary.py")
BASE, FOLD, METRICS, SPIKE, diff, records = (session52.BASE, session52.FOLD, session52.METRICS, session52.SPIKE,
                                             session52.diff, session52.records)
flat, history_kv = session55.flat, session55.history_kv  # (the whole cache, prompt included, over an ordinary one's)
LENGTHS = (128, 256)


def lower(cell: str) -> float:
    """The lower end of a `diff` cell, '+0.014 [-0.004, +0.034]'."""
    return float(cell.split("[")[1].split(",")[0])


def math() -> bool | None:
    got = records(HERE / "eval-rows360-480-prompt4")
    if got is None:
        print("eval-rows360-480-prompt4 has not finished\n")
        return None
    fold, base = got[FOLD], got[BASE]
    rows = flat(fold)
    draws = len(rows) // len(fold)
    tau = sum(r["tokens"] for r in rows) / sum(r["forwards"] for r in rows)
    spikes = [sum(r["worst_token_nll"] > SPIKE for d in g.values() for r in d) / draws for g in (fold, base)]
    print("## Check 1: the default fold (`segments:60:0.45:none:bits=8/4:rotate:prompt=4`), dev GSM8K rows 360-479, "
          "three draws, 256 tokens, sampled T 0.7 top-p 0.9\n")
    print("| prompts x draws | tau | history KV, prompt included | answers' KV (measured) | answers > 6 nats per "
          "draw (base-sampled's) | " + " | ".join(f"{m} - base-sampled" for m in METRICS) + " | rep4 - base (greedy) |")
    print("|---|---|---|---|---|" + "---|" * (len(METRICS) + 1))
    cells = [diff(fold, base, m) for m in METRICS] + [diff(fold, got["base"], "rep4")]
    print(f"| {len(fold)} x {draws} | {tau:.2f} | {history_kv(rows):.3f} | {session52.measured_share(rows):.3f} | "
          f"{spikes[0]:.1f} ({spikes[1]:.1f}) | " + " | ".join(cells) + " |\n")
    before = records(HERE.parent / "2026-11-29-default-math/eval-rows360-480-k8v4r")[FOLD]
    print(f"session 54's fold (no prompt stored) on these rows, seeds and base answers: history KV "
          f"{history_kv(flat(before)):.3f}; this fold - that one: "
          + ", ".join(f"{m} {diff(fold, before, m)}" for m in METRICS) + "\n")
    held = all(lower(c) <= 0 for c in cells[:2] + cells[-1:])  # worst, NLL vs sampled; rep4 vs greedy: none above 0
    print(f"rule 1 (no interval wholly above 0): {'holds' if held else 'fails'}\n")
    return held


def speed() -> bool | None:
    print("## Check 2: `hamburger bench`, greedy, batch 1, 8 prompts (2 per category), 3 repetitions\n")
    print("| new tokens | method | decode tok/s | vs HF | vs verify | tau | whole cache vs HF's | identical to HF |")
    print("|---|---|---|---|---|---|---|---|")
    verdict = True
    for n in LENGTHS:
        path = HERE / f"speed-{n}/results.json"
        result = json.loads(path.read_text()) if path.exists() else {}
        if "summary" not in result:
            print(f"| {n} | not run yet | | | | | | |")
            verdict = None
            continue
        pooled = {s["method"]: s for s in result["summary"] if s["category"] == "all"}
        for method, s in pooled.items():
            vs_verify = s["decode_tok_s"] / pooled["verify"]["decode_tok_s"]
            print(f"| {n} | {method} | {s['decode_tok_s']:.1f} | {s['speedup_vs_hf']:.2f}x | {vs_verify:.2f}x | "
                  f"{s['tau']:.2f} | {s['kv_vs_hf']:.3f} | {s['identical_to_base']:.2f} |")
        fold = next(s for method, s in pooled.items() if method.startswith("verify_fold"))
        if verdict is not None:
            verdict = verdict and (fold["speedup_vs_hf"] >= 1.4 and fold["kv_vs_hf"] <= 0.67
                                   and fold["decode_tok_s"] >= 0.9 * pooled["verify"]["decode_tok_s"])
    if verdict is not None:
        machine = json.loads((HERE / "speed-256/results.json").read_text()).get("machine", {})
        print(f"\nmachine: {machine.get('cpu')}, torch {machine.get('torch')}, {machine.get('dtype')}, "
              f"{machine.get('threads')} threads")
        print(f"\nrule 2 (>= 1.4x HF, >= 0.9x verify, whole cache <= 0.67, at both lengths): "
              f"{'holds' if verdict else 'fails'}")
    return verdict


def serve(folder: str = "serve", title: str = "Check 3") -> bool | None:
    runs = {(mode, b): HERE / f"{folder}/{mode}-b{b}.json" for b in (1, 2, 4, 8) for mode in ("verify", "verify_fold")}
    if not all(path.exists() for path in runs.values()):
        print(f"\n{folder}: serve.sh has not finished")
        return None
    got = {key: json.loads(path.read_text())["results"] for key, path in runs.items()}
    print(f"\n## {title}: `hamburger serve` under load (16 dev prompts at once, 128 tokens, greedy)\n")
    print("| server batch | mode | completion tok/s | vs verify | mean tau | latency p50 s | first chunk p50 s |")
    print("|---|---|---|---|---|---|---|")
    held = True
    for b in (1, 2, 4, 8):
        for mode in ("verify", "verify_fold"):
            r, ratio = got[mode, b], got[mode, b]["tokens_per_s"] / got["verify", b]["tokens_per_s"]
            print(f"| {b} | {mode} | {r['tokens_per_s']} | {ratio:.2f}x | {r['mean_tau']} | {r['latency_s_p50']} | "
                  f"{r['ttft_s_p50']} |")
        held = held and got["verify_fold", b]["tokens_per_s"] >= 0.9 * got["verify", b]["tokens_per_s"]
    verdict = "holds" if held else "fails"
    print(f"\nrule 3 (verify_fold >= 0.9x verify's completion tok/s at every batch size): {verdict}")
    return held


def main() -> None:
    checks = [math(), speed()]
    if None not in checks:
        print(f"\nverify_fold becomes generate's default mode: {'yes' if all(checks) else 'no'}")
    held = serve()
    if held is not None:
        print(f"verify_fold becomes serve's default mode: {'yes' if held else 'no'}")
    serve("serve-2", "Check 3's second repetition (after the rule was read; verify_fold first at each batch size)")


if __name__ == "__main__":
    main()
