"""Predicted outputs (OpenAI's `prediction`): a request says what much of its answer will be (a file to edit, a text
to revise), and verify mode drafts from it, free, where the answer follows it; the base verifies every draft, so the
answer is what it would be without one.

The answer is followed by position: ``at`` is the prediction's token that the answer's next token should be while
the two agree. Where the base takes a token the prediction does not hold there (an edit), the answer's last
``ngram``..``min_ngram`` tokens are looked for further on in the prediction (never behind: an edit moves forward
through the text) and drafting goes on after them; where they are not found, no draft comes from it.
"""

from __future__ import annotations

from dataclasses import dataclass

PREDICTION_TOKENS = 10  # the most tokens one step drafts from a prediction (as `lookup.LOOKUP_TOKENS`)


@dataclass
class Prediction:
    """One row's predicted answer (token ids) and where its answer stands in it."""

    tokens: list[int]
    most: int = PREDICTION_TOKENS
    ngram: int = 3
    min_ngram: int = 2
    at: int | None = 0  # the prediction's token the answer's next one should be (None: the answer left it)
    seen: int = 0  # the answer's tokens followed so far
    began: int = 0  # where the last drafts from it began

    def propose(self, answer: list[int], room: int) -> list[int]:
        """At most ``min(most, room)`` drafts: the prediction's tokens after where ``answer`` (the tokens taken so
        far) stands in it; [] where it does not follow the prediction."""
        new, self.seen = answer[self.seen:], len(answer)
        if self.at is not None and self.tokens[self.at:self.at + len(new)] == new:
            self.at += len(new)
        else:
            self.at = self._find(answer)
        if self.at is None or min(self.most, room) < 1:
            return []
        self.began = self.at
        return self.tokens[self.at:self.at + min(self.most, room)]

    def _find(self, answer: list[int]) -> int | None:
        """Where the prediction goes on after the answer's last n tokens (the longest n that occurs), looking from
        where the answer last stood in it; None where none occurs."""
        for n in range(min(self.ngram, len(answer)), self.min_ngram - 1, -1):
            tail = answer[-n:]
            for i in range(self.began, len(self.tokens) - n + 1):
                if self.tokens[i:i + n] == tail:
                    return i + n
        return None
