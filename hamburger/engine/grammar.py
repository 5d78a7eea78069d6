"""Structured output: an answer held to a JSON schema (OpenAI's `response_format`; `DecodingConfig.json_schema`) or to
an llguidance Lark grammar (`DecodingConfig.grammar`: text with tool calls in it, `serve/tools.py`).

At each token a row chooses (a group's first, from the base, and its later ones, from the micro-step decoder; in the
verify modes the base's test of each draft), the tokens the schema does not allow next get -inf: llguidance's matcher
(a Rust library) follows the answer token by token and gives the allowed set as a bitmask. Once the schema is complete
only an end-of-sequence id is allowed, so the answer ends there. The reported probabilities stay the model's.

The matcher reads the model's tokenizer: a fast tokenizer's own decoder where llguidance knows it (byte-level BPE,
SentencePiece), else each token's text as the tokenizer decodes it alone.
"""

from __future__ import annotations

import json
import weakref

import torch

from hamburger.errors import HamburgerError

# JSON laid out one way (no free whitespace between its parts): a small model held to a schema may otherwise fill the
# answer with blank lines until its token limit
LAYOUT = {"whitespace_flexible": False}
_TOKENIZERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # HF tokenizer -> {(vocab, eos): LLTokenizer}


def compile_schema(schema) -> str:
    """An llguidance grammar for a JSON schema (a dict); a clear error for a schema it cannot hold an answer to."""
    from llguidance import LLMatcher

    if not isinstance(schema, dict):
        raise HamburgerError(f"a JSON schema must be a JSON object, got {type(schema).__name__}")
    return _checked(lambda: LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults=LAYOUT), "JSON schema")


def compile_lark(text: str) -> str:
    """An llguidance grammar for a Lark grammar in llguidance's syntax; a clear error for one it cannot use."""
    from llguidance import LLMatcher

    return _checked(lambda: LLMatcher.grammar_from_lark(text), "grammar")


def _checked(make, what: str) -> str:
    """The grammar ``make()`` gives, validated by llguidance; "unusable ``what``: why" where it cannot be used."""
    from llguidance import LLMatcher

    try:
        grammar = make()
    except (ValueError, TypeError) as e:
        raise HamburgerError(f"unusable {what}: {e}") from e
    error = LLMatcher.validate_grammar(grammar)
    if error:
        raise HamburgerError(f"unusable {what}: {error}")
    return grammar


def compile_config(config) -> str:
    """The llguidance grammar a `DecodingConfig` holds its answer to (its JSON schema or its grammar)."""
    return compile_schema(config.json_schema) if config.json_schema is not None else compile_lark(config.grammar)


class _Characters:
    """A tokenizer as llguidance's `TokenizerWrapper` reads one: each token's bytes (its text decoded alone), its
    special tokens, and encoding."""

    def __init__(self, tokenizer, vocab: int, eos: list[int]):
        self.eos_token_id, self.bos_token_id = eos[0], tokenizer.bos_token_id
        self.special_token_ids = sorted(i for i in tokenizer.all_special_ids if i < vocab)
        special = set(self.special_token_ids)
        self.tokens = [b"" if i in special else tokenizer.decode([i]).encode() for i in range(vocab)]
        self._tokenizer = tokenizer

    def __call__(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False)


def ll_tokenizer(tokenizer, vocab: int, eos: list[int]):
    """The llguidance tokenizer of an HF one (made once per tokenizer, vocabulary and EOS ids: it takes ~0.4 s)."""
    import llguidance
    import llguidance.hf

    cached = _TOKENIZERS.setdefault(tokenizer, {})
    key = (vocab, tuple(eos))
    if key not in cached:
        try:
            cached[key] = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab, eos_token=list(eos))
        except ValueError:  # a decoder llguidance does not know: each token's own text
            cached[key] = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Characters(tokenizer, vocab, eos)),
                                                 n_vocab=vocab, eos_token=list(eos))
    return cached[key]


class Grammar:
    """One row's constraint: a matcher that has read the row's answer so far. Called like `penalties.Penalties` (the
    logits of a choice, and the drafts before a verify position); `add` each token the row takes."""

    def __init__(self, grammar: str, tokenizer, vocab: int, eos: list[int], device: torch.device):
        """``grammar``: an llguidance grammar (`compile_schema`, `compile_lark`)."""
        from llguidance import LLMatcher

        if not eos:
            raise HamburgerError("a constrained answer needs an end-of-sequence id to end with")
        try:
            self.matcher = LLMatcher(ll_tokenizer(tokenizer, vocab, eos), grammar)
        except ValueError as e:
            raise HamburgerError(f"unusable grammar: {e}") from e
        if self.matcher.is_error():
            raise HamburgerError(f"unusable grammar: {self.matcher.get_error()}")
        self.vocab, self.device = vocab, device
        self._bits = torch.tensor([1 << k for k in range(8)], dtype=torch.uint8)

    def add(self, token: int) -> None:
        self.matcher.consume_token(token)

    def forced(self) -> list[int]:
        """The tokens the schema forces next, in the tokenizer's own spelling of its forced text (none where the schema
        leaves a choice): verify mode drafts them (`VerifyGeneration._look_up`)."""
        return [] if self.matcher.is_error() else self.matcher.compute_ff_tokens()

    def allowed(self) -> torch.Tensor:
        """The tokens the schema allows next [V] (bool, on the model's device)."""
        packed = torch.frombuffer(bytearray(self.matcher.compute_bitmask()), dtype=torch.uint8)
        return ((packed[:, None] & self._bits) != 0).flatten()[:self.vocab].to(self.device)

    def mask(self, after: list[int] = ()) -> torch.Tensor | None:
        """The tokens [V] the schema allows after the answer and the tokens ``after`` (drafts), or None where it refuses
        one of those (a position no test reaches: that draft is not kept) or holds nothing more (a token was forced
        past it)."""
        if self.matcher.is_error():
            return None
        taken = self.matcher.try_consume_tokens(list(after)) if after else 0
        try:
            return self.allowed() if taken == len(after) else None
        finally:
            if taken:
                self.matcher.rollback(taken)

    def __call__(self, logits: torch.Tensor, after: list[int] = ()) -> torch.Tensor:
        """One position's logits [V] with the tokens the schema does not allow after the answer (and ``after``) at
        -inf (unchanged where `mask` is None)."""
        allowed = self.mask(after)
        return logits if allowed is None else logits.float().masked_fill(~allowed, -torch.inf)
