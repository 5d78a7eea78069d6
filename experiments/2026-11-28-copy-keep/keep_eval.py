"""`hamburger eval` with verify_fold protecting the answer's own copy sources: a token the default fold would drop
(a group's later token, keep ``first``) whose bigram with the token before it does not occur in the prompt (content
the answer made: a result, a name it introduced; what sources.py found the failed copies copy) leaves its slot only
after every unprotected one: groups past the window fold as before, less their protected tokens, and while the
answer still holds more than the fold's ``kv`` slots per token, the protected tokens leave oldest first. So at a KV
budget the cache holds as many slots as without the protection, spent on the answer's own content. An experiment's
patch (of `FoldState` and `VerifyGeneration._fold_out`), not a library feature; needs a fold with ``kv`` and keep
``first``.

    python experiments/2026-11-28-copy-keep/keep_eval.py eval --verify-fold ...:first:...:kv=0.65 ARGS...
"""

from __future__ import annotations

import sys

import torch

from hamburger.cli import main
from hamburger.engine import verify
from hamburger.engine.folding import FoldState


class ContentKeep(FoldState):
    """`FoldState` whose protected tokens (novel bigrams: not in the prompt) leave last."""

    def __init__(self, folding, vocab_size):
        super().__init__(folding, vocab_size)
        self.prompt_pairs: set[tuple[int, int]] = set()
        self.before_answer = -1  # the prompt's last token
        self.ids: list[int] = []  # the answer's tokens so far
        self.deferred: list[int] = []  # protected tokens of folded groups still in their slots, oldest first
        self.released: set[int] = set()  # protected tokens that have left
        self.releasing: list[int] = []  # ... and those that leave at the next fold

    def chose(self, logits, tokens):
        super().chose(logits, tokens)
        self.ids += tokens

    def protected(self, j: int) -> bool:
        return (self.ids[j - 1] if j else self.before_answer, self.ids[j]) not in self.prompt_pairs

    def leaving(self, start, end):
        return [i for i in super().leaving(start, end) if i in self.released or not self.protected(i)]

    def due(self, fed):
        groups = super().due(fed)
        for start, end in groups:
            self.deferred += [i for i in self.folding.leaving(start, end) if i not in self.offtop and self.protected(i)]
        while self.deferred and fed - self.saved > self.folding.kv * fed:
            j = self.deferred.pop(0)
            self.released.add(j)
            self.releasing.append(j)
            self.saved += 1
        return groups

    def fold(self, valid, groups):  # (FoldState.fold with the released tokens of older groups leaving too)
        leaving = {i for start, end in groups for i in self.leaving(start, end)} | set(self.releasing)
        self.releasing = []
        ranks = torch.tensor([len(self.live) - k for k, i in enumerate(self.live) if i in leaving], device=valid.device)
        from_end = valid.flip(0).cumsum(0).flip(0)
        valid &= ~(valid & torch.isin(from_end, ranks))
        self.live = [i for i in self.live if i not in leaving]


def fold_out(cache, b, r):
    if r.folding is None:
        return []
    groups = r.folding.due(r.fed - len(r.prompt_ids))
    if groups or r.folding.releasing:
        r.folding.fold(cache.valid[b], groups)
    return []  # (keep first: nothing to feed)


_add = verify.VerifyGeneration.add


def add(self, prompt_ids, config):
    index = _add(self, prompt_ids, config)
    state = self.rows[index].folding
    if state is not None:
        if state.folding.keep != "first" or not state.folding.kv:
            raise SystemExit("keep_eval.py needs a fold that keeps first with a kv budget")
        state.prompt_pairs, state.before_answer = set(zip(prompt_ids, prompt_ids[1:])), prompt_ids[-1]
    return index


verify.FoldState = ContentKeep
verify.VerifyGeneration._fold_out = staticmethod(fold_out)
verify.VerifyGeneration.add = add
sys.exit(main())
