"""One table of the decodes in this folder's result files and the default mode's on the same prompts and model
(experiments/2026-11-25-fold-tail/decode_fidelity_delay.json): tau, KV ratios (all slots, and the answers' only), the base's view of the answers, and the
paired differences against the base's sampled answers (95% bootstrap intervals over the prompts).

    python experiments/2026-11-25-verify-fold/summary.py > experiments/2026-11-25-verify-fold/summary.txt
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = [HERE / "decode_fidelity.json", HERE / "decode_fidelity_draft05.json", HERE / "decode_fidelity_more.json",
         HERE / "decode_fidelity_default.json", HERE.parent / "2026-11-25-fold-tail" / "decode_fidelity_delay.json"]
LAYOUTS = {(0, 0): "paper", (1, 2): "fold 2", (1, 3): "fold 3"}


def label(run: dict) -> str:
    if run["model"].startswith("base "):
        return run["model"]
    if run.get("verify_fold"):
        draft = "always" if run["confidence"] < 0.1 else f"stop head {run['confidence']}"
        model = "shipped default model, " if "default_model" in run["model"] else ""
        return f"{model}verify, fold {run['verify_fold']}, drafts: {draft}"
    return f"default mode, {LAYOUTS[(run['single_tail'], int(run['fold_tail']))]} layout, knob {run['confidence']}"


def main() -> None:
    print("| decoding | tau | KV ratio (answers) | NLL/token | worst-token NLL | rep4 | NLL vs base sampled | worst vs "
          "base sampled |")
    print("|---|---|---|---|---|---|---|---|")
    seen = set()
    for path in FILES:
        if not path.exists():
            continue
        result = json.loads(path.read_text())
        paired = {(p["model"], p["confidence"], p.get("single_tail", 0), p.get("fold_tail", 0), p.get("verify_fold")): p
                  for p in result.get("paired", []) if p["against"] == "base sampled"}
        for run in result["runs"]:
            name = label(run)
            if name in seen:
                continue
            seen.add(name)
            s = run["summary"]
            key = (run["model"], run["confidence"], run.get("single_tail", 0), int(run.get("fold_tail", 0)),
                   run.get("verify_fold"))
            p = paired.get(key)
            diff = ["{:+.3f} [{:+.3f}, {:+.3f}]".format(*p[m]) if p else "" for m in ("nll_per_token", "worst_token_nll")]
            answers = s.get("kv_ratio_answer")
            print(f"| {name} | {s['tau']:.3f} | {s['kv_ratio']:.3f} ({answers:.3f}) | {s['nll_per_token']:.3f} | "
                  f"{s['worst_token_nll']:.2f} | {s['rep4']:.3f} | {diff[0]} | {diff[1]} |" if answers is not None else
                  f"| {name} | {s['tau']:.3f} | {s['kv_ratio']:.3f} | {s['nll_per_token']:.3f} | "
                  f"{s['worst_token_nll']:.2f} | {s['rep4']:.3f} | {diff[0]} | {diff[1]} |")


if __name__ == "__main__":
    main()
