"""What sampled verify_fold's spikes are: every answer of an arm (default s45, all draws) whose worst token under the
unchanged base exceeds 6 nats (< 0.25%), re-tokenized and teacher-forced after the chat-templated prompt: the token,
whether it holds a digit, its position, the base-sampled answers' spikes likewise, and the context before it.

    python experiments/2026-11-27-draws/spikes.py [ARM] > experiments/2026-11-27-draws/spikes-ARM.txt
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from hamburger.core.base import load_base
from hamburger.eval.run import gsm8k_examples

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from summary import BASE, FOLD, SPIKE, arm  # noqa: E402

_spec = importlib.util.spec_from_file_location("worst_tokens", HERE.parent / "2026-11-26-long-answers/worst_tokens.py")
_worst = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_worst)
worst_token = _worst.worst_token
MORE = HERE.parent / "2026-11-27-gpu-fold-reverse/gsm8k_dev_60_120.jsonl"


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "s45"
    torch.set_num_threads(2)
    lm, tokenizer = load_base()[:2]
    questions = {e.id: e.prompt for e in gsm8k_examples(None, 60) + gsm8k_examples(str(MORE), 60)}
    print("| method | id | draw | worst NLL | position | token | digit | context before (40 tokens) |")
    print("|---|---|---|---|---|---|---|---|")
    counts: dict[str, list[bool]] = {}
    for r in arm(name):
        if r["method"] not in (FOLD, BASE) or r["worst_token_nll"] <= SPIKE:
            continue
        nll, at, token, digit, context = worst_token(lm, tokenizer, questions[r["id"]], r["text"], before=40)
        counts.setdefault(r["method"], []).append(digit)
        print(f"| {r['method']} | {r['id']} | {r.get('draw', 0)} | {nll:.2f} | {at} | {token!r} | "
              f"{'yes' if digit else 'no'} | {context} |")
    print("\n| method | spikes (> 6 nats, re-tokenized) | holding a digit |\n|---|---|---|")
    for method, flags in counts.items():
        print(f"| {method} | {len(flags)} | {sum(flags)} |")


if __name__ == "__main__":
    main()
