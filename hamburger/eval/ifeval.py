"""IFEval: verifiable instruction following, scored offline by the official checkers.

Prompts: the 541 IFEval prompts (834 instructions) shipped in ``hamburger/data/ifeval/`` (Apache-2.0).
Checkers: PyPI ``if-verifiable`` (the IFEval reference implementation); its samples are built here from
the shipped file, never downloaded. Scores per answer, as in the IFEval paper:
  prompt_strict / prompt_loose  1 when every instruction of the prompt is followed
  inst_strict / inst_loose      fraction of the prompt's instructions followed
"Loose" also accepts the answer without its first and/or last line and without markdown asterisks.
Instruction-level accuracy over a set of prompts is the micro average over instructions.

The sentence-count checks need NLTK's ``punkt_tab`` (English) data. It is never downloaded at run
time: ``setup.sh`` installs it (`install_punkt_tab`); without it scoring stops with a clear error.
IFEval is a test set: never train or choose the default knob on it.
"""

from __future__ import annotations

import random
import zipfile
from pathlib import Path

from hamburger.data.io import read_jsonl
from hamburger.errors import HamburgerError

DATA = Path(__file__).resolve().parents[1] / "data" / "ifeval" / "input_data.jsonl.gz"
PUNKT = "tokenizers/punkt_tab/english/"
PUNKT_IN_WHEEL = "llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/"
PUNKT_WHEEL = "llama-index-core==0.14.25"  # carries a copy of NLTK's punkt_tab data (see setup.sh)


def load_ifeval(path: str | Path | None = None, limit: int | None = None) -> list[dict]:
    """IFEval rows ``{"key", "prompt", "instruction_id_list", "kwargs"}`` from the shipped file (or `path`,
    plain or gzipped jsonl), in file order."""
    path = Path(path) if path else DATA
    if not path.is_file():
        raise HamburgerError(f"IFEval data {path} is missing")
    rows = read_jsonl(path)
    known = _registry()
    unknown = sorted({i for r in rows for i in r["instruction_id_list"]} - set(known))
    if unknown:
        raise HamburgerError(f"{path}: instruction types without a checker: {unknown}")
    return rows[:limit] if limit is not None else rows


def require_punkt() -> None:
    """Fail loudly (never score silently as a fail) when NLTK's punkt_tab data is not installed."""
    import nltk

    try:
        nltk.data.find(PUNKT)
    except LookupError:
        raise HamburgerError(
            "IFEval's sentence checks need NLTK's punkt_tab data, which is not installed (searched "
            f"{nltk.data.path}). Run setup.sh, or: pip download --no-deps {PUNKT_WHEEL} -d /tmp/w && "
            "python -c \"from hamburger.eval.ifeval import install_punkt_tab as i; "
            "import glob; i(glob.glob('/tmp/w/llama_index_core-*.whl')[0])\"") from None


def install_punkt_tab(wheel: str | Path, dest: str | Path | None = None) -> Path:
    """Extract only English punkt_tab (and its README) from a wheel that carries NLTK's data into
    `dest`/tokenizers/punkt_tab (default ``<sys.prefix>/share/nltk_data``, on NLTK's default search path)."""
    import sys

    dest = Path(dest) if dest else Path(sys.prefix) / "share" / "nltk_data"
    wanted = (PUNKT_IN_WHEEL + "english/", PUNKT_IN_WHEEL + "README")
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.startswith(wanted) and not n.endswith("/")]
        if not any(n.startswith(wanted[0]) for n in names):
            raise HamburgerError(f"{wheel} holds no {wanted[0]}")
        for name in names:
            target = dest / "tokenizers" / "punkt_tab" / name[len(PUNKT_IN_WHEEL):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(name))
    return dest


def _registry() -> dict:
    try:
        from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT
    except ImportError as e:
        raise HamburgerError("IFEval scoring needs the `if-verifiable` package: "
                             "pip install if-verifiable==0.1.2") from e
    return INSTRUCTION_DICT


def score_ifeval(row: dict, response: str) -> dict:
    """Strict and loose results of one answer to one IFEval row: per instruction and per prompt."""
    require_punkt()
    import langdetect
    from if_verifiable.common import evaluate_instructions

    langdetect.DetectorFactory.seed = 0  # the language check is randomised; make it reproducible
    ids = list(row["instruction_id_list"])
    # a checker whose kwargs it cannot use draws them from `random` (the letter of keywords:letter_frequency when the
    # row's "letter" is "#", as in key 1122): seed it by the row, so that an answer always gets the same verdict and
    # every method's answer to a row is checked against the same drawn values
    state = random.getstate()
    random.seed(f"ifeval:{row.get('key')}")
    try:
        results, _ = evaluate_instructions(response=response, instruction_id_list=ids, kwargs_list=row["kwargs"],
                                           prompt=row["prompt"], instruction_registry=_registry())
    finally:
        random.setstate(state)
    if not results and not response.strip():  # an empty answer follows no instruction
        strict = loose = [False] * len(ids)
    elif [r.instruction_id for r in results] != ids:
        raise HamburgerError(f"IFEval key {row.get('key')}: the checkers skipped an instruction")
    else:
        strict, loose = [r.strict_pass for r in results], [r.loose_pass for r in results]
    n = len(ids)
    return {"prompt_strict": float(all(strict)), "prompt_loose": float(all(loose)),
            "inst_strict": sum(strict) / n, "inst_loose": sum(loose) / n, "instructions": n,
            "followed": [{"id": i, "strict": s, "loose": lo} for i, s, lo in zip(ids, strict, loose)]}


METRICS = ("prompt_strict", "prompt_loose", "inst_strict", "inst_loose")


def aggregate(rows: list[dict]) -> dict:
    """The four IFEval accuracies over scored answers (instruction level: micro average)."""
    n = sum(r["instructions"] for r in rows)
    out = {k: sum(r[k] for r in rows) / max(1, len(rows)) for k in ("prompt_strict", "prompt_loose")}
    out.update({k: sum(r[k] * r["instructions"] for r in rows) / max(1, n) for k in ("inst_strict", "inst_loose")})
    return out
