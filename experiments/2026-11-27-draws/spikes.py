"""What sampled verify_fold's spikes are: every answer of an arm (default s45, all draws) whose worst token under the
unchanged base exceeds 6 nats (< 0.25%), re-tokenized and teacher-forced after the chat-templated prompt: the token,
whether it holds a digit, its position, the 40 tokens before it, and the base-sampled answers' spikes likewise
(`../2026-11-26-long-answers/worst_tokens.py`'s table).

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
MORE = HERE.parent / "2026-11-27-gpu-fold-reverse/gsm8k_dev_60_120.jsonl"


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "s45"
    torch.set_num_threads(2)
    lm, tokenizer = load_base()[:2]
    questions = {e.id: e.prompt for e in gsm8k_examples(None, 60) + gsm8k_examples(str(MORE), 60)}
    spikes = [r for r in arm(name) if r["method"] in (FOLD, BASE) and r["worst_token_nll"] > SPIKE]
    _worst.print_table(lm, tokenizer, questions, spikes, before=40, draws=True)


if __name__ == "__main__":
    main()
