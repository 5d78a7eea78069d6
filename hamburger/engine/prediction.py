"""Predicted outputs (OpenAI's `prediction`): a request says what much of its answer will be (a file to edit, a text
to revise), and verify mode drafts from it, free, where the answer follows it; the base verifies every draft, so the
answer is what it would be without one.

The answer is followed by position: ``at`` is the prediction's token that the answer's next token should be while
the two agree. Where the base takes a token the prediction does not hold there (an edit), the answer's last
``ngram``..``min_ngram`` tokens are looked for further on in the prediction (never behind: an edit moves forward
through the text) and drafting goes on after them; where they are not found, no draft comes from it.

How many tokens a step drafts follows how the last ones fared: ``first`` (10) at the start and after a step whose
drafts were not all kept, twice as many after one whose drafts were all kept, up to ``most`` (64): a prediction the
answer follows for long (a file re-emitted with a few edits) is verified in long runs, one base forward each; where
the answer leaves it, the step's drafts past that point are refused (up to ``most``, where there were at most 10), and
the next steps draft 10 again. In a batch the engine gives a row at most
``most // rows`` (at least ``first``), so one row's long drafts do not widen every row's forward far, and with a fold
``first`` (`VerifyGeneration._prediction_room`).
"""

from __future__ import annotations

from dataclasses import dataclass

PREDICTION_TOKENS = 10  # the drafts of a prediction's first step, and of one after a refusal (`lookup.LOOKUP_TOKENS`)
PREDICTION_MOST = 64  # the most a run of steps whose drafts were all kept grows a step's drafts to


@dataclass
class Prediction:
    """One row's predicted answer (token ids) and where its answer stands in it."""

    tokens: list[int]
    most: int = PREDICTION_MOST
    first: int = PREDICTION_TOKENS
    ngram: int = 3
    min_ngram: int = 2
    at: int | None = 0  # the prediction's token the answer's next one should be (None: the answer left it)
    seen: int = 0  # the answer's tokens followed so far
    began: int = 0  # where the last drafts from it began
    drafted: int = 0  # how many the last proposal drafted
    size: int = 0  # the most the next step drafts (0: `first`)

    def propose(self, answer: list[int], room: int) -> list[int]:
        """At most ``min(size, room)`` drafts: the prediction's tokens after where ``answer`` (the tokens taken so
        far) stands in it; [] where it does not follow the prediction. ``size`` doubles after a step that kept all
        the last drafts, up to ``most``, and is ``first`` again after one that did not."""
        new, self.seen = answer[self.seen:], len(answer)
        start = min(self.first, self.most)
        if self.drafted:
            kept = new[:self.drafted] == self.tokens[self.began:self.began + self.drafted]
            self.size = min(2 * self.size, self.most) if kept else start
        self.size = self.size or start
        if self.at is not None and self.tokens[self.at:self.at + len(new)] == new:
            self.at += len(new)
        else:
            self.at = self._find(answer)
        drafts = [] if self.at is None else self.tokens[self.at:self.at + max(0, min(self.size, room))]
        self.drafted = len(drafts)
        if drafts:
            self.began = self.at
        return drafts

    def _find(self, answer: list[int]) -> int | None:
        """Where the prediction goes on after the answer's last n tokens (the longest n that occurs), looking from
        where the answer last stood in it; None where none occurs."""
        for n in range(min(self.ngram, len(answer)), self.min_ngram - 1, -1):
            tail = answer[-n:]
            for i in range(self.began, len(self.tokens) - n + 1):
                if self.tokens[i:i + n] == tail:
                    return i + n
        return None
