"""vLLM's `bad_words`: words an answer may not hold. Each word is read as the tokenizer spells it at the start of a text
and after a space (``"word"`` and ``" word"``); a spelling of one token bans that token everywhere, a longer one bans
its last token wherever the answer's last tokens are the rest of it. So a word's usual spellings never appear whole,
while the tokens it is made of stay free elsewhere (as vLLM's; other spellings, such as another split into tokens,
are not caught). Other settings come first: where `allowed_token_ids` left only banned ids, the ban yields.

A row's `BadWords` is one of its `sampling.Adjust`s: it keeps the answer's last tokens, and bans on the host (the device
micro loop has no such state, so a row with bad words needs the host loop, as a schema does).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from hamburger.errors import HamburgerError


def spellings(words: Sequence[str], tokenizer) -> list[list[int]]:
    """Each word's token ids at the start of a text and after a space, without repeats (words that read as no
    token at all are refused)."""
    out: list[list[int]] = []
    for word in words:
        if not isinstance(word, str) or not word.strip():
            raise HamburgerError(f"bad_words must be non-empty strings, got {word!r}")
        for text in (word.lstrip(), " " + word.lstrip()):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if ids and ids not in out:
                out.append(list(ids))
    return out


class BadWords:
    """One row's bad words as token sequences (`spellings`); `add` each token the row takes."""

    def __init__(self, sequences: list[list[int]], vocab: int):
        if any(not 0 <= t < vocab for seq in sequences for t in seq):
            raise HamburgerError(f"bad_words spell token ids outside the vocabulary [0, {vocab})")
        self.sequences = sequences
        self.always = sorted({seq[0] for seq in sequences if len(seq) == 1})
        self.longest = max(map(len, sequences))
        self.recent: list[int] = []  # the answer's last tokens: as many as a ban can look back at

    @classmethod
    def of(cls, words: Sequence[str], tokenizer, vocab: int) -> BadWords:
        if tokenizer is None:
            raise HamburgerError("bad_words need the model's tokenizer")
        return cls(spellings(words, tokenizer), vocab)

    def add(self, token: int) -> None:
        self.recent = (self.recent + [token])[-(self.longest - 1):] if self.longest > 1 else []

    def banned(self, after: Sequence[int] = ()) -> list[int]:
        """The ids banned next, after the answer and the tokens ``after`` (drafts before a verify position)."""
        history = self.recent + list(after)
        found = set(self.always)
        for seq in self.sequences:
            if len(seq) > 1 and len(history) >= len(seq) - 1 and history[len(history) - len(seq) + 1:] == seq[:-1]:
                found.add(seq[-1])
        return sorted(found)

    def __call__(self, logits: torch.Tensor, after: Sequence[int] = ()) -> torch.Tensor:
        """One position's logits [V] with the banned ids at -inf; as they are where that would leave no token at all
        (`allowed_token_ids`, or `min_tokens` holding back the end, left only banned ones): the answer goes on with a
        banned word rather than with a token nothing allows. (`Generation.add` refuses a request whose one-token
        bans leave no token anywhere; a longer word's ban can still empty one position.)"""
        banned = self.banned(after)
        if not banned:
            return logits
        out = logits.float().index_fill(-1, torch.tensor(banned, device=logits.device), -math.inf)
        return out if bool(torch.isfinite(out).any()) else logits
