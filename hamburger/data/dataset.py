"""Segmented datasets (`hamburger segment` output): loaded and checked once, here.

A dataset is a jsonl file of rows ``id``, ``prompt_ids``, ``response_ids``, ``groups`` (sizes 1..max_steps that
cut the response), optionally ``entropies`` (one per response token), with a sidecar ``FILE.meta.json``
(``kind: hamburger-dataset``) that names its tokenizer (size and vocabulary hash) and its settings.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from hamburger.data.io import line_of, meta_path, read_jsonl, read_sidecar
from hamburger.errors import HamburgerError

ROW_LISTS = ("prompt_ids", "response_ids", "groups")
VAL_ONE_IN = 20  # the fixed validation split of a dataset: 1 in 20 prompts (by a hash of the prompt's id)
SAMPLE_SUFFIX = re.compile(r"#s([0-9]+)$")  # a sampled answer's row id: PROMPT_ID#s<n> (`hamburger distill`)


def sample_id(prompt_id: str, n: int) -> str:
    """The row id of answer ``n`` to a prompt: the prompt's own id for the main answer (0), else ``ID#s<n>``."""
    return prompt_id if n == 0 else f"{prompt_id}#s{n}"


def prompt_id(row_id: str) -> str:
    """The prompt's id of a row id (``sample_id``'s inverse): ``t0:7#s2`` -> ``t0:7``; a main answer's id as it is."""
    return SAMPLE_SUFFIX.sub("", row_id)


def is_val_row(row_id: str) -> bool:
    """Whether a row belongs to the fixed validation split: 1 in VAL_ONE_IN prompts, by the first 8 hex digits of
    sha256 of the prompt's id, so every answer to one prompt (main and sampled) falls on the same side."""
    return int(hashlib.sha256(prompt_id(row_id).encode()).hexdigest()[:8], 16) % VAL_ONE_IN == 0


def vocab_hash(tokenizer) -> str:
    """A short hash of the tokenizer's vocabulary (token -> id), to check datasets against tokenizers."""
    items = sorted(tokenizer.get_vocab().items(), key=lambda kv: (kv[1], kv[0]))
    return hashlib.sha256(json.dumps(items, ensure_ascii=False).encode()).hexdigest()[:16]


def check_dataset_compatible(meta: dict, tokenizer, max_steps: int) -> None:
    """Raise HamburgerError unless the dataset was made with this tokenizer and this max_steps."""
    t = meta.get("tokenizer", {})
    if t.get("vocab_size") != len(tokenizer) or t.get("vocab_hash") != vocab_hash(tokenizer):
        raise HamburgerError(f"dataset was tokenized with another tokenizer ({t.get('name')}, vocab "
                             f"{t.get('vocab_size')}) than this base's (vocab {len(tokenizer)}); re-run segment")
    made = meta.get("settings", {}).get("max_steps")
    if made != max_steps:
        raise HamburgerError(f"dataset groups were cut with max_steps={made}, the model uses {max_steps}; "
                             f"re-cut it with `hamburger segment --from-dataset DATA --max-steps {max_steps}`")


def row_problem(r, max_steps: int, vocab: int) -> str | None:
    """What is wrong with one dataset row (None if nothing)."""
    if not isinstance(r, dict):
        return "a row must be a JSON object"
    if not all(k in r for k in ("id", *ROW_LISTS)):
        return "lacks prompt_ids/response_ids/groups"
    for key in ROW_LISTS:
        if not isinstance(r[key], list) or not all(type(x) is int for x in r[key]):
            return f"field {key!r} must be a list of integers, got {r[key]!r:.60}"
    if "entropies" in r and not (isinstance(r["entropies"], list)
                                 and all(type(x) in (int, float) for x in r["entropies"])):
        return "field 'entropies' must be a list of numbers"
    if not r["prompt_ids"] or not r["response_ids"]:
        return "empty prompt or response"
    if sum(r["groups"]) != len(r["response_ids"]) or not all(1 <= g <= max_steps for g in r["groups"]):
        return f"groups {r['groups'][:8]}... do not cut the response into 1..{max_steps}"
    if "entropies" in r and len(r["entropies"]) != len(r["response_ids"]):
        return "entropies and response_ids differ in length"
    ids = r["prompt_ids"] + r["response_ids"]
    if max(ids) >= vocab or min(ids) < 0:
        return f"token id outside the vocabulary ({vocab})"
    return None


def load_dataset(path: str | Path, tokenizer=None, max_steps: int | None = None, vocab_size: int | None = None
                 ) -> tuple[list[dict], dict]:
    """(rows, meta) of a segmented dataset, every row checked (a truncated last line from a live job is ignored).

    With ``tokenizer`` and ``max_steps``: also refuse a dataset made for another tokenizer or max_steps
    (`check_dataset_compatible`); with ``vocab_size`` (the model's embedding rows): token ids past it.
    """
    mp = meta_path(path)
    if not Path(path).is_file():
        raise HamburgerError(f"dataset {str(path)!r} is missing: the file does not exist (make one with "
                             "`hamburger segment`)")
    if not mp.is_file():
        raise HamburgerError(f"dataset {path}: its {mp.name} is missing (make one with `hamburger segment`)")
    meta = read_sidecar(path)
    if meta.get("kind") != "hamburger-dataset":
        raise HamburgerError(f"{mp} is not a hamburger dataset meta file")
    if tokenizer is not None:
        check_dataset_compatible(meta, tokenizer, max_steps)
    max_steps, vocab = meta["settings"]["max_steps"], meta["tokenizer"]["vocab_size"]
    vocab = min(vocab, vocab_size) if vocab_size is not None else vocab
    rows = read_jsonl(path, tail="ignore")
    for n, r in enumerate(rows, 1):
        problem = row_problem(r, max_steps, vocab)
        if problem:
            where = f"line {line_of(path, n)}" + (f" (id {r.get('id')})" if isinstance(r, dict) else "")
            raise HamburgerError(f"{path}: {where}: {problem}")
    return rows, meta
