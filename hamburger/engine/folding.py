"""Folding a verify-mode cache: old answer tokens leave their one-token slots for one merged slot per group.

Verify mode (`engine/verify.py`) keeps the base's own choice of every token, reading an ordinary one-slot-per-token
cache. With a `Folding`, a group of the answer's older tokens leaves the cache once ``window`` answer tokens were fed
after it (its slots become holes) and comes back as one merged slot (the compositional embedder, at its last token's
position), fed first in the next forward. So the cache holds one slot per group of the folded history plus the last
``window``-odd tokens one by one, and every token is still the base's own choice given that cache: only the reading of
the folded history differs from the base's.

Groups (``groups``):
  * ``segments``: the base's own entropy cut (`data.segment`, by default ``sliding`` 0.9, as training data is cut),
    on the entropies of the base's distributions that chose the tokens. Cuts run left to right, so every group but
    the last of the cut is final;
  * ``forwards``: the tokens one verify forward kept in the cache (its pending token and the drafts the base kept).
What a folded group leaves in the cache (``keep``):
  * ``merged``: one merged slot (HAMburger's: the compositional embedder's vector of the group, read by the base and
    the checkpoint's adapters);
  * ``last``: its last token's own slot, the keys and values the base wrote there having read the whole group; the
    others become holes. No merged slot is fed, so no grafted module or adapter reads the history: training-free;
  * ``first``: the same with its first token's slot (in ``segments``, the uncertain token that starts the group);
  * ``none``: nothing: the group's slots all become holes (eviction, the training-free control of the keeps above:
    only the groups of one token and the window stay).
A group holds at most ``segments.max_steps`` tokens (with keep ``merged``, at most what the embedder merges); a group
of one token stays in its slot. With ``share``, the window grows with the answer (``share`` of its tokens when that is
more than ``window``), so the cache keeps about the same share of the answer's slots at every length. With a budget
``kv``, groups past the window fold, oldest first, only while the answer holds more than ``kv`` slots per token: the
cache folds as little history as that share of the base's KV allows. With ``offtop``, a token the base did not rank
first (a sampled one the base would not have written greedily) never leaves its slot: the fold drops only tokens that
were the base's top choice where they were written. Greedy decoding writes none, so it folds as without it. With
``bits`` 8 or 4, the tokens a fold takes out do not leave: they move into a store of 8- or 4-bit slots every layer
still reads (`engine/quantized.py`), and groups of one token fold too, so every answer token past the window is
stored; ``value_bits`` give the values other bits than the keys, and ``rotate`` turns each head's channels before
rounding. With ``prompt`` N as well, the prompt's slots move into the store too, all but its first N, when the first
answer tokens do: from then on only the window (and the prompt's first N slots, which attention leans on most, cf.
the attention sinks of Xiao et al. 2024) stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate

import torch

from hamburger.core.packing import KEEPS, leaving
from hamburger.data.segment import STRATEGIES, SegmentSettings, log_softmax_entropy, segment_entropies
from hamburger.engine.quantized import BITS
from hamburger.errors import HamburgerError

GROUPINGS = ("segments", "forwards")
FLAGS = ("offtop", "rotate")  # a fold spec's fields without a value
# The `parse_folding` spec used where none is given (since session 55): the answer's last 60 tokens, or 45% of them
# when more, stay whole; every older token stays too, its key at 8 bits and its value at 4, each head's channels
# turned (`engine/quantized.py`; training-free), and from then on the prompt's slots too, but its first 4 (its checks
# on dev prompts: README, "Quantized history"). Session 54's default: the same without ``prompt=4``.
DEFAULT_FOLD = "segments:60:0.45:none:bits=8/4:rotate:prompt=4"
# The default until session 54, which drops tokens: groups keep their first token's own slot, cut at sliding 0.7 into
# up to 8 tokens, past the same window. The default model's fold reader and full heads were trained and chosen for it.
READER_FOLD = "segments:60:0.45:first:steps=8:p=0.7"


@dataclass(frozen=True)
class Folding:
    """When a group of answer tokens folds into one merged slot, and how the groups are cut."""

    window: int = 8  # a group folds once this many answer tokens were fed after its last one
    share: float = 0.0  # ... or this share of the answer's fed tokens, when more: the window grows with the answer
    kv: float = 0.0  # fold only while the answer holds more slots per token than this (0: every group past the window)
    groups: str = "segments"  # `GROUPINGS`
    keep: str = "merged"  # `KEEPS`: what a folded group leaves in the cache
    segments: SegmentSettings = field(default_factory=lambda: SegmentSettings(strategy="sliding", sliding_p=0.9))
    offtop: bool = False  # a token its distribution did not rank first keeps its own slot (keep first, last or none)
    bits: int = 0  # 0: folded tokens leave the cache; 8 or 4: they stay at that many bits (`engine/quantized.py`)
    value_bits: int = 0  # the stored values' bits, when not ``bits`` (0: as the keys')
    rotate: bool = False  # the store turns each head's channels before rounding (`quantized.rotation`)
    prompt: int | None = None  # with bits: the prompt's slots are stored too but its first this many (None: none)

    def validate(self, max_steps: int) -> "Folding":
        if self.window < 0:
            raise HamburgerError(f"the fold window must be >= 0 tokens, got {self.window}")
        if not 0 <= self.share < 1:
            raise HamburgerError(f"the fold window's share of the answer must be in [0, 1), got {self.share}")
        if not 0 <= self.kv < 1:
            raise HamburgerError(f"the fold's KV budget (slots per answer token) must be in [0, 1), got {self.kv}")
        if self.groups not in GROUPINGS:
            raise HamburgerError(f"fold groups must be one of {', '.join(GROUPINGS)}, got {self.groups!r}")
        if self.keep not in KEEPS:
            raise HamburgerError(f"a folded group keeps one of {', '.join(KEEPS)}, got {self.keep!r}")
        if self.segments.max_steps < 1 or not 0 < self.segments.sliding_p < 1:
            raise HamburgerError(f"fold groups need steps >= 1 and a sliding confidence p in (0, 1), got "
                                 f"{self.segments.max_steps} and {self.segments.sliding_p}")
        if self.segments.strategy not in STRATEGIES:
            raise HamburgerError(f"unknown strategy {self.segments.strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if self.offtop and self.keep == "merged":
            raise HamburgerError("offtop keeps a token's own slot, so it needs a fold that keeps a token (first, last "
                                 "or none), not merged")
        if self.bits and (self.bits not in BITS or self.keep == "merged" or self.kv):
            raise HamburgerError(f"a fold's store holds {' or '.join(map(str, BITS))} bits, keeps a token (first, last "
                                 f"or none; not merged) and counts no kv budget; got bits={self.bits}, keep "
                                 f"{self.keep}, kv={self.kv}")
        if (self.value_bits or self.rotate) and not self.bits or self.value_bits not in (0, *BITS):
            raise HamburgerError(f"value bits ({' or '.join(map(str, BITS))}) and rotate shape a store of bits: give "
                                 f"bits=N or bits=KEYS/VALUES; got bits={self.bits}, value bits {self.value_bits}, "
                                 f"rotate {self.rotate}")
        if self.prompt is not None and (self.prompt < 0 or not self.bits):
            raise HamburgerError(f"prompt=N stores the prompt's slots but its first N (N >= 0) in a store of bits: give "
                                 f"bits=N too; got prompt={self.prompt}, bits={self.bits}")
        if self.keep == "merged" and self.segments.max_steps > max_steps:
            raise HamburgerError(f"fold groups of up to {self.segments.max_steps} tokens, but the embedder merges at "
                                 f"most {max_steps}")
        return self

    def leaving(self, start: int, end: int) -> range:
        """The tokens of group [start, end) that leave their one-token slots when it folds."""
        return leaving(start, end, self.keep)

    def window_at(self, fed: int) -> int:
        """The window when ``fed`` answer tokens are in the cache: ``window``, or ``share`` of them when more."""
        return max(self.window, int(self.share * fed))


def parse_folding(spec: str) -> Folding:
    """``GROUPS:WINDOW[:FIELD...]`` -> a `Folding`, validated later (segments: sliding 0.9, groups of up to 4). Each
    optional field at most once, in any order: SHARE, a number (``segments:32:0.25``: the last 32 answer tokens or the
    last quarter of them, whichever is more, stay unfolded), KEEP (``merged``, ``last``, ``first`` or ``none``: what a
    folded group leaves), ``steps=N`` (the longest group), ``p=P`` (the sliding cut's confidence), ``kv=B`` (fold
    only while the answer holds more than B slots per token) and ``offtop`` (a token the base did not rank first keeps
    its slot) and ``bits=8`` or ``bits=4`` (the tokens a fold takes out stay at that many bits; ``bits=8/4``: keys at
    8, values at 4) and ``rotate`` (the store turns each head's channels before rounding) and ``prompt=N`` (the
    prompt's slots but its first N are stored too), e.g. ``segments:64:first:steps=8:p=0.7:offtop`` or
    ``segments:60:0.45:none:bits=8/4:rotate:prompt=4``."""
    groups, _, rest = spec.partition(":")
    window, *fields = rest.split(":")
    try:
        named = {}
        for f in fields:
            if "=" in f:
                key, _, value = f.partition("=")
            else:
                key, value = "keep" if f in KEEPS else f if f in FLAGS else "share", f
            if key not in ("share", "keep", "steps", "p", "kv", "bits", "prompt", *FLAGS) or key in named \
                    or (key in FLAGS) != (value == key):
                raise ValueError
            named[key] = value
        key_bits, _, value_bits = named.get("bits", "0").partition("/")
        cut = SegmentSettings(strategy="sliding", sliding_p=float(named.get("p", 0.9)),
                              max_steps=int(named.get("steps", 4)))
        return Folding(window=int(window), groups=groups, share=float(named.get("share", 0)),
                       kv=float(named.get("kv", 0)), keep=named.get("keep", "merged"), segments=cut,
                       offtop="offtop" in named, bits=int(key_bits), value_bits=int(value_bits or 0),
                       rotate="rotate" in named, prompt=int(named["prompt"]) if "prompt" in named else None)
    except ValueError:
        raise HamburgerError(f"a folding is GROUPS:WINDOW[:SHARE][:KEEP][:steps=N][:p=P][:kv=B][:offtop][:bits=N"
                             f"[/N]][:rotate][:prompt=N], "
                             f"e.g. segments:8, forwards:4, segments:32:0.25 or "
                             f"segments:64:first:steps=8:p=0.7:kv=0.65; got {spec!r}") from None


class FoldState:
    """One row's folding: which of its answer tokens sit in one-token slots, and the groups due to fold."""

    def __init__(self, folding: Folding, vocab_size: int):
        self.folding, self.vocab_size = folding, vocab_size
        self.live: list[int] = []  # the row's answer slots in cache order: a token's index, or -1 for a merged slot
        self.entropies: list[float] = []  # of each emitted token's distribution (segments only)
        self.offtop: set[int] = set()  # the answer tokens their distribution did not rank first (with ``offtop``)
        self.chosen = 0  # answer tokens chosen so far
        self.forwards: list[tuple[int, int]] = []  # the undecided answer tokens each forward kept: [start, end)
        self.decided = 0  # answer tokens before this belong to groups already folded (or left as single slots)
        self.saved = 0  # answer slots the folds took out of the cache (net of the merged slots they feed)
        self.folds = 0  # groups folded so far
        self.prompt_stored = False  # the prompt's slots went to the store (with ``prompt``)

    def chose(self, logits: torch.Tensor, tokens: list[int]) -> None:
        """The base's logits [n, V] that chose the row's next n ``tokens`` (their entropies cut the segments)."""
        if self.folding.groups == "segments":  # (the entropies training data is cut by)
            self.entropies += log_softmax_entropy(logits)[1].tolist()
        if self.folding.offtop:
            top = logits.argmax(-1).tolist()
            self.offtop.update(self.chosen + k for k, (t, u) in enumerate(zip(tokens, top)) if t != u)
        self.chosen += len(tokens)

    def leaving(self, start: int, end: int) -> list[int]:
        """The tokens of group [start, end) that leave their one-token slots when it folds (`Folding.leaving`, less
        the off-top tokens with ``offtop``)."""
        return [i for i in self.folding.leaving(start, end) if i not in self.offtop]

    def fed(self, start: int, end: int) -> None:
        """Answer tokens [start, end) were written to the cache as one-token slots by one forward (its groups: cut
        into pieces of at most `segments.max_steps` tokens, what the embedder merges, when a forward kept more)."""
        self.live += range(start, end)
        step = self.folding.segments.max_steps
        self.forwards += [(s, min(s + step, end)) for s in range(start, end, step)]

    def due(self, fed: int) -> list[tuple[int, int]]:
        """The groups [start, end) of 2+ tokens to fold now, when ``fed`` answer tokens are in the cache: the final
        groups past the window, oldest first, while the answer holds more than ``kv`` slots per token."""
        limit = fed - self.folding.window_at(fed)
        if self.folding.groups == "forwards":
            cut = self.forwards
        else:  # the base's entropy cut of the undecided tokens: all groups but the last are final
            sizes = segment_entropies(self.entropies[self.decided:fed], self.folding.segments, self.vocab_size)
            ends = list(accumulate(sizes))
            cut = [(self.decided + e - n, self.decided + e) for n, e in zip(sizes[:-1], ends[:-1])]
        out = []
        for start, end in cut:
            if end > limit or fed - self.saved <= self.folding.kv * fed:
                break
            self.decided = end
            if end - start > 1 or self.folding.bits:
                out.append((start, end))
                self.folds += 1
                self.saved += len(self.leaving(start, end)) - (self.folding.keep == "merged")
        self.forwards = [(s, e) for s, e in self.forwards if s >= self.decided]
        return out

    def fold(self, valid: torch.Tensor, groups: list[tuple[int, int]]) -> torch.Tensor:
        """Mark the one-token slots of ``groups`` as holes in the row's cache validity ``valid`` [slots] (in place) and
        record their merged slots, fed next (keep ``last`` or ``first``: that token of each group stays, nothing is
        fed); return the slots that became holes (a mask like ``valid``; with ``bits``, what the store takes, and with
        ``prompt`` at the first fold the prompt's slots but its first N too). The row's answer slots are its last
        valid ones, in order, so a slot is found by its rank among the valid slots counted from the end, and the
        prompt's are the valid ones before them (no host sync)."""
        leaving = {i for start, end in groups for i in self.leaving(start, end)}
        ranks = torch.tensor([len(self.live) - k for k, i in enumerate(self.live) if i in leaving], device=valid.device)
        from_end = valid.flip(0).cumsum(0).flip(0)
        gone = valid & torch.isin(from_end, ranks)
        if self.folding.prompt is not None and groups and not self.prompt_stored:
            self.prompt_stored = True
            gone |= valid & (from_end > len(self.live)) & (valid.cumsum(0) > self.folding.prompt)
        valid &= ~gone
        live = [i for i in self.live if i not in leaving]
        while live and live[0] == -1:  # merged slots before every single one no longer matter to a rank
            live.pop(0)
        self.live = live + [-1] * (len(groups) if self.folding.keep == "merged" else 0)
        return gone
