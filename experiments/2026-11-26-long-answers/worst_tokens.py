"""Where verify-fold's long GSM8K answers spike: for every answer of the 256-token GSM8K dev eval
(eval-dev-default-segments-32-c0.3-p10-t256-gsm8k/examples.jsonl), the unchanged base's worst token, teacher-forced
after the chat-templated prompt (the answer's text re-tokenized), with its context, and whether it holds a digit.

    python experiments/2026-11-26-long-answers/worst_tokens.py > experiments/2026-11-26-long-answers/worst_tokens.txt
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from hamburger.core.base import load_base
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.plausibility import token_nll
from hamburger.eval.run import gsm8k_examples

EVAL = Path(__file__).resolve().parent / "eval-dev-default-segments-32-c0.3-p10-t256-gsm8k"


def worst_token(lm, tokenizer, question: str, text: str, before: int = 12) -> tuple[float, int, str, bool, str]:
    """An answer's worst token under ``lm``, teacher-forced after the chat-templated question (the text
    re-tokenized): (its NLL, its position, the token, whether it holds a digit, the ``before`` tokens before it as one
    table-safe line)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    nll = token_nll(lm, encode_prompt(tokenizer, question), ids)
    at = max(range(len(nll)), key=nll.__getitem__)
    token = tokenizer.decode(ids[at:at + 1])
    context = tokenizer.decode(ids[max(0, at - before):at]).replace("\n", "\\n").replace("|", "/")
    return nll[at], at, token, any(c.isdigit() for c in token), context


def print_table(lm, tokenizer, questions: dict[str, str], rows: list[dict], before: int = 12,
                draws: bool = False) -> None:
    """A table row per answer (``rows``: eval records) with its worst token (`worst_token`), then the share of each
    method's answers whose worst token holds a digit; ``draws``: also each record's draw and the token's position."""
    extra = ("draw", "position") if draws else ()
    columns = extra[:1] + ("worst NLL",) + extra[1:]
    print("| method | id | " + " | ".join(columns) + " | token | digit | context before |")
    print("|---|---|---|---|---|---|" + "---|" * len(extra))
    digits: dict[str, list[bool]] = {}
    for r in rows:
        nll, at, token, has_digit, context = worst_token(lm, tokenizer, questions[r["id"]], r["text"], before)
        digits.setdefault(r["method"], []).append(has_digit)
        cells = [f"{r.get('draw', 0)}", f"{nll:.2f}", f"{at}"] if draws else [f"{nll:.2f}"]
        print(f"| {r['method']} | {r['id']} | " + " | ".join(cells)
              + f" | {token!r} | {'yes' if has_digit else 'no'} | {context} |")
    print("\n| method | answers whose worst token holds a digit |\n|---|---|")
    for method, flags in digits.items():
        print(f"| {method} | {sum(flags)}/{len(flags)} |")


def main() -> None:
    torch.set_num_threads(2)
    lm, tokenizer = load_base()[:2]
    questions = {e.id: e.prompt for e in gsm8k_examples(None, 20)}
    rows = [json.loads(line) for line in (EVAL / "examples.jsonl").read_text().splitlines()]
    print_table(lm, tokenizer, questions, rows)


if __name__ == "__main__":
    main()
