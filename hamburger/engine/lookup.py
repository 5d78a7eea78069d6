"""Prompt lookup drafts: the tokens that followed the latest earlier occurrence of the text's last n-gram.

Answers often copy from their prompt or from themselves (numbers in a worked sum, names, code, a list's pattern).
Where the last ``ngram`` tokens (then fewer, down to ``min_ngram``) occurred before, the tokens that followed that
occurrence are a free draft: no forward makes it. Verify mode (`engine/verify.py`) drafts these where a match
exists and asks the MSD elsewhere; the base verifies every draft either way. (Saxena 2023, "prompt lookup decoding";
HF's `prompt_lookup_num_tokens` takes the earliest match, this the latest, which follows the answer's own recent
pattern.)
"""

from __future__ import annotations

from dataclasses import dataclass

from hamburger.errors import HamburgerError

LOOKUP_TOKENS = 10  # the default draft length: `hamburger generate`, `serve` and `eval` draft by lookup unless told 0


@dataclass(frozen=True)
class PromptLookup:
    """Draft up to ``tokens`` tokens from the latest earlier match of the last ``ngram``..``min_ngram`` tokens."""

    tokens: int = LOOKUP_TOKENS  # most tokens one lookup drafts
    ngram: int = 3  # longest n-gram matched first
    min_ngram: int = 2  # shortest n-gram that still counts as a match

    def validate(self) -> "PromptLookup":
        if self.tokens < 1:
            raise HamburgerError(f"prompt lookup must draft >= 1 token, got {self.tokens}")
        if not 1 <= self.min_ngram <= self.ngram:
            raise HamburgerError(f"prompt lookup n-grams must satisfy 1 <= min_ngram <= ngram, got "
                                 f"{self.min_ngram}..{self.ngram}")
        return self

    def propose(self, history: list[int], limit: int) -> list[int]:
        """At most ``min(tokens, limit)`` tokens that followed the latest earlier occurrence of ``history``'s last
        n-gram (the longest n that matches); [] when none does."""
        most = min(self.tokens, limit)
        if most < 1:
            return []
        for n in range(min(self.ngram, len(history) - 1), self.min_ngram - 1, -1):
            tail = history[-n:]
            last = tail[-1]
            for start in range(len(history) - n - 1, -1, -1):  # latest first; the tail itself is no match
                if history[start + n - 1] == last and history[start:start + n] == tail:
                    return history[start + n:start + n + most]
        return []
