"""vLLM's structured outputs: a request's `structured_outputs` object ({"json": schema}, {"regex": ...}, {"choice":
[...]} or {"grammar": ...}, one of them), or the older `guided_json`, `guided_regex`, `guided_choice` and
`guided_grammar` fields, so that code written for vLLM's server (the official clients' `extra_body`) runs here.

Each becomes what `DecodingConfig` holds an answer to (`engine/grammar.py`): a JSON schema, or a Lark grammar in
llguidance's syntax. A regex must match the whole answer, a choice is one of its strings exactly, and a grammar may be
written in Lark or in llama.cpp's GBNF (converted by llguidance). Anything that cannot hold an answer is refused with
400 before the request waits for a row.
"""

from __future__ import annotations

import json

from hamburger.engine.grammar import compile_lark, compile_schema
from hamburger.errors import HamburgerError

KINDS = ("json", "regex", "choice", "grammar")
LEGACY = {f"guided_{kind}": kind for kind in KINDS}  # vLLM's fields before `structured_outputs`


class StructuredError(ValueError):
    """A malformed structured-outputs request (``param``: the field at fault)."""

    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.param = param


def parse_structured(body: dict) -> tuple[dict | None, str | None]:
    """A request body's structured outputs -> (the JSON schema, the Lark grammar) its answer is held to: one of them at
    most, (None, None) where it asks for none."""
    asked = {LEGACY[key]: (key, body[key]) for key in LEGACY if body.get(key) is not None}
    spec = body.get("structured_outputs")
    if spec is not None:
        if not isinstance(spec, dict):
            raise StructuredError("'structured_outputs' must be an object", "structured_outputs")
        for key, value in spec.items():
            if key not in KINDS:
                raise StructuredError(f"'structured_outputs' may hold one of {', '.join(KINDS)}, not {key!r}",
                                      "structured_outputs")
            if value is not None:
                asked[key] = ("structured_outputs", value)
    if not asked:
        return None, None
    if len(asked) > 1:
        raise StructuredError(f"an answer is held to one of {', '.join(KINDS)}, got {', '.join(sorted(asked))}",
                              asked[sorted(asked)[-1]][0])
    (kind, (param, value)), = asked.items()
    try:
        if kind == "json":
            schema = json.loads(value) if isinstance(value, str) else value
            compile_schema(schema)
            return schema, None
        grammar = lark_of(kind, value)
        compile_lark(grammar)
        return None, grammar
    except (HamburgerError, ValueError) as e:
        raise StructuredError(f"{param} ({kind}): {e}", param) from e


def lark_of(kind: str, value) -> str:
    """The Lark grammar of a regex, a choice or a grammar (Lark or GBNF)."""
    from llguidance.gbnf_to_lark import any_to_lark

    if kind == "choice":
        if not isinstance(value, list) or not value or not all(isinstance(c, str) and c for c in value):
            raise ValueError("a choice is a list of non-empty strings")
        return "start: " + " | ".join(json.dumps(c) for c in value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a {kind} is a non-empty string")
    if kind == "regex":
        return f"start: {regex_term(value)}"
    try:
        return any_to_lark(value)
    except Exception as e:  # (its converter raises whatever its parser meets)
        raise ValueError(f"neither Lark nor GBNF: {e}") from e


def regex_term(pattern: str) -> str:
    """A regex as a Lark regex literal (llguidance's)."""
    from llguidance import regex_to_lark

    return f"/{regex_to_lark(pattern)}/"
