"""Prompt files for distillation and evaluation, with fixed train/dev splits of the shipped data.

Sources (read from the data root, see `data_root`: by default the copies shipped in the package,
``hamburger/data/``, gzipped; a folder of the uncompressed upstream files works the same):
  * ``t0_prompts``: ``self_instruct/t0_prompts.jsonl`` (field ``prompt``; ``reference`` kept, with the
    literal ``<|endoftext|>`` marker stripped). Ids ``t0:<line>``.
  * ``self_instruct``: ``self_instruct/seed_tasks.jsonl``; prompt = instruction, plus ``"\\n\\n" + input``
    when the input is non-empty; ``reference`` = the instance output. Ids ``self_instruct:<line>``
    (``self_instruct:<line>.<instance>`` for instances after the first).
  * ``gsm8k``: ``gsm8k/train.jsonl`` (field ``question``; ``answer`` kept). Ids ``gsm8k:<line>``.
Lines are counted from 0 in the shipped files.

The split never changes (tests pin it):
  * GSM8K: the LAST 500 rows of ``gsm8k/train.jsonl`` are ``dev``, every row before them is ``train``.
  * every other source: ``split_of(prompt_text)``: a prompt is ``dev`` when the first 8 hex digits of
    ``sha256(prompt.encode("utf-8"))``, read as an integer, are divisible by 20 (1 in 20, ~5%), else
    ``train``. Identical prompt texts therefore always fall in the same split.

``build_prompts`` drops exact duplicate prompt texts (first occurrence wins), shuffles each source with
``random.Random(seed)`` and interleaves the sources round-robin (each source gets an equal share while it
lasts), so any prefix of the file is a balanced mix; ``limit`` then keeps the first N.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Literal

from hamburger.data.io import read_jsonl
from hamburger.errors import HamburgerError

SOURCES = ("t0_prompts", "self_instruct", "gsm8k")
GSM8K_DEV_ROWS = 500
DEV_ONE_IN = 20
Split = Literal["train", "dev"]


def split_of(text: str) -> Split:
    """The fixed split of a prompt text (hash rule; GSM8K uses `gsm8k_split` instead)."""
    h = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)
    return "dev" if h % DEV_ONE_IN == 0 else "train"


def gsm8k_split(index: int, n_rows: int) -> Split:
    """The fixed split of GSM8K row `index` (0-based) in a file of `n_rows` rows: the last 500 are dev."""
    return "dev" if index >= n_rows - GSM8K_DEV_ROWS else "train"


PACKAGE_DATA = Path(__file__).resolve().parent  # the shipped data files sit beside this module


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data folder: `root`, else env ``HAMBURGER_DATA``, else the package's own ``hamburger/data``."""
    path = Path(root or os.environ.get("HAMBURGER_DATA") or PACKAGE_DATA)
    if not path.is_dir():
        raise HamburgerError(f"data folder {path} not found; set HAMBURGER_DATA to the folder holding "
                             "gsm8k/ and self_instruct/")
    return path


def read_data_file(path: Path) -> list[dict]:
    """Rows of ``path`` (a ``.jsonl``), or of its gzipped copy ``path.gz`` when only that exists."""
    gz = path.with_name(path.name + ".gz")
    if not path.is_file() and not gz.is_file():
        raise HamburgerError(f"data file {path} (or {gz.name}) is missing")
    return read_jsonl(path if path.is_file() else gz)


def _t0(root: Path) -> list[dict]:
    out = []
    for i, r in enumerate(read_data_file(root / "self_instruct" / "t0_prompts.jsonl")):
        row = {"id": f"t0:{i}", "prompt": r["prompt"], "source": "t0_prompts"}
        if r.get("reference") is not None:
            row["reference"] = r["reference"].replace("<|endoftext|>", "").strip()
        row["split"] = split_of(row["prompt"])
        out.append(row)
    return out


def _self_instruct(root: Path) -> list[dict]:
    out = []
    for i, r in enumerate(read_data_file(root / "self_instruct" / "seed_tasks.jsonl")):
        for j, inst in enumerate(r.get("instances") or [{"input": "", "output": None}]):
            inp = (inst.get("input") or "").strip()
            prompt = r["instruction"].strip() + (f"\n\n{inp}" if inp else "")
            row = {"id": f"self_instruct:{i}" + (f".{j}" if j else ""), "prompt": prompt, "source": "self_instruct"}
            if inst.get("output") is not None:
                row["reference"] = inst["output"]
            row["split"] = split_of(prompt)
            out.append(row)
    return out


def _gsm8k(root: Path) -> list[dict]:
    rows = read_data_file(root / "gsm8k" / "train.jsonl")
    return [{"id": f"gsm8k:{i}", "prompt": r["question"], "source": "gsm8k", "answer": r["answer"],
             "split": gsm8k_split(i, len(rows))} for i, r in enumerate(rows)]


_READERS = {"t0_prompts": _t0, "self_instruct": _self_instruct, "gsm8k": _gsm8k}


def build_prompts(sources: list[str], split: str, limit: int | None = None, seed: int = 0,
                  root: str | os.PathLike | None = None) -> list[dict]:
    """Prompt records of `split` ("train", "dev" or "all") from `sources`, shuffled and interleaved.

    Each record: ``{"id", "prompt", "source"}`` plus ``"reference"`` (t0, self_instruct) or ``"answer"``
    (gsm8k). Deterministic for a given seed and data.
    """
    unknown = [s for s in sources if s not in _READERS]
    if unknown or not sources:
        raise HamburgerError(f"unknown prompt source(s) {unknown or sources}; choose from {', '.join(SOURCES)}")
    if split not in ("train", "dev", "all"):
        raise HamburgerError(f"unknown split {split!r}; choose train, dev or all")
    base = data_root(root)
    seen: set[str] = set()
    per_source = []
    for k, name in enumerate(dict.fromkeys(sources)):
        rows = []
        for r in _READERS[name](base):
            if r["prompt"] in seen or (split != "all" and r["split"] != split):
                continue
            seen.add(r["prompt"])
            del r["split"]
            rows.append(r)
        random.Random(f"{seed}:{name}").shuffle(rows)
        per_source.append(rows)
    mixed = [rows[i] for i in range(max(map(len, per_source), default=0)) for rows in per_source if i < len(rows)]
    return mixed[:limit] if limit is not None else mixed


