"""Prompt caching: the KV cache of prompts read before, kept across requests, so a prompt that begins the same way
reads only what is new (what vLLM calls automatic prefix caching, llama.cpp's server `cache_prompt`).

A chat's next turn sends the whole conversation again: its prompt is the last prompt, the answer and the new message.
Requests with the same system prompt, or few-shot examples, begin alike too. A prompt's slots are one per token (the
merging starts with the answer), so the cache after reading a prompt is the base's ordinary KV cache of it, whatever
the engine does next; a later prompt whose first P tokens are those of a kept one takes a copy of the kept cache cut
to P slots and reads from token P on (`Generation`'s chunked prefill), with the same tokens as if it read everything.
Lossless verify mode, whose cache holds an answer one plain slot per token too, keeps each prompt with its answer
(`VerifyGeneration`), so a chat's next turn reads only its new message.

A kept prompt can be cut where it ended, or at a multiple of ``block`` tokens (where the engine keeps the micro-step
decoder's inputs, which reading on needs: `cuts`). At least one token is always read, since the first group comes
from the prompt's last position. A prompt that begins like a kept one holds only its own slots after the longest cut
of that one it begins with: the store holds a shared start (a system prompt, few-shot examples, a conversation's
earlier turns) once, as vLLM's blocks do (a cache of another kind, a sliding window's or one with a store of its own,
is kept whole: `SlotCache.plain`). The store holds up to ``max_bytes`` of caches and forgets the least recently used
prompt no other one reads on from (a prompt is used whenever one that reads on from it is). A kept prompt that a new
one holds whole (begins with it and can be cut where it ends) and no other one reads on from goes. A store holds one
engine's prompts (`bind`): another model, mode or folding reads prompts otherwise, or keeps another kind of cache.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Iterable

import torch

from hamburger.engine.cache import SlotCache, joined, rows_copy
from hamburger.errors import HamburgerError

BLOCK = 16  # prompt tokens between the places a kept prompt can be cut short (vLLM's block size)
PROMPT_CACHE_MIB = 256  # `serve`'s and `chat`'s default store: about 5,750 tokens of SmolLM2-135M's in fp32


def _key(ids: list[int]) -> bytes:
    """Token ids as bytes, 8 to an id: a prompt begins with another's first n tokens where their first 8n bytes are
    equal (one C comparison)."""
    return array("q", ids).tobytes()


@dataclass(eq=False)  # (one is found by identity)
class _Kept:
    key: bytes  # the prompt's token ids (`_key`)
    cache: SlotCache  # one row: the prompt's slots from ``shared`` on
    cuts: dict[int, torch.Tensor]  # prompt length -> the micro-step decoder's inputs at its last slot (up to
    # ``shared``: the very tensors of ``start``'s)
    bytes: int  # of its own slots and inputs
    start: "_Kept | None" = None  # the kept prompt whose first ``shared`` slots are this one's
    shared: int = 0
    readers: int = 0  # kept prompts whose ``start`` this is

    def __post_init__(self):
        # the lengths it can be cut at, in order (a cache whose sliding layers forgot slots holds what queries after its
        # end see: it is cut nowhere else)
        self.points = [len(self)] if self.cache.forgotten else sorted(self.cuts)

    def __len__(self) -> int:
        return len(self.key) // 8

    def cut(self, prompt: bytes, most: int, least: int = 0) -> int:
        """The longest length in (``least``, ``most``] tokens it can be cut at that ``prompt`` (`_key`) begins with; 0:
        none. (Whether a prompt begins with its first n tokens only turns false as n grows: a binary search.)"""
        first = lo = bisect_right(self.points, least)
        hi = bisect_right(self.points, most)
        while lo < hi:
            mid = (lo + hi) // 2
            end = 8 * self.points[mid]
            if self.key[:end] == prompt[:end]:
                lo = mid + 1
            else:
                hi = mid
        return self.points[lo - 1] if lo > first else 0

    def holds(self, prompt: bytes) -> bool:
        """Whether it begins with the whole ``prompt`` (`_key`) and can be cut where that ends."""
        n, at = len(prompt) // 8, bisect_left(self.points, len(prompt) // 8)
        return at < len(self.points) and self.points[at] == n and self.key.startswith(prompt)


@dataclass
class Hit:
    """A copy of a kept prompt's cache cut to its first ``length`` tokens, for a prompt that begins with them."""

    cache: SlotCache  # one row, ``length`` slots, the caller's own
    length: int
    inputs: torch.Tensor  # [1, ...] the micro-step decoder's inputs at slot ``length`` - 1 (`decode_features`)
    cuts: dict[int, torch.Tensor] = field(default_factory=dict)  # those of the kept prompt up to ``length``


class PromptCache:
    """Kept prompt caches of one engine (one model, one kind of cache), up to ``max_bytes``; see the module's doc."""

    def __init__(self, max_bytes: int, block: int = BLOCK):
        if max_bytes < 0 or block < 1:
            raise HamburgerError(f"a prompt cache needs max_bytes >= 0 and block >= 1, got {max_bytes} and {block}")
        self.max_bytes, self.block = max_bytes, block
        self._kept: dict[_Kept, None] = {}  # least recently used first (a dict: moved to the end at once)
        self._bytes = 0
        self.engine: tuple | None = None  # the engine whose caches it holds (`bind`)
        self.lookups = 0  # prompts looked up
        self.hits = 0  # of those, prompts that began with a kept one's tokens
        self.tokens_reused = 0  # prompt tokens those hits did not read again

    def bind(self, engine: tuple) -> None:
        """Hold the caches of ``engine`` alone (a key of its model and its kind of cache): another engine's prompt
        reading may differ (adapters, another model) and its cache may be of another kind."""
        if self.engine is None:
            self.engine = engine
        elif engine != self.engine:
            raise HamburgerError("this prompt cache holds another engine's prompts (another model, mode or folding): "
                                 "give each engine a store of its own")

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._kept)

    def cuts(self, start: int, end: int, total: int) -> list[int]:
        """The prompt lengths in (``start``, ``end``] a prompt of ``total`` tokens read up to ``end`` keeps the
        micro-step decoder's inputs at: the multiples of ``block`` before its end, and its end."""
        first = start // self.block * self.block + self.block
        points = list(range(first, min(end, total - 1) + 1, self.block))
        return points + [total] if end >= total else points

    def find(self, prompt_ids: list[int]) -> Hit | None:
        """The longest cut of a kept prompt that ``prompt_ids`` begins with (one token short of it, at most), copied;
        None: none."""
        self.lookups += 1
        best, best_cut = self._longest(_key(prompt_ids), self._kept)
        if best is None:
            return None
        self._use(best)
        self.hits += 1
        self.tokens_reused += best_cut
        return Hit(_copy(best, best_cut), best_cut, best.cuts[best_cut][None],
                   {c: inputs for c, inputs in best.cuts.items() if c <= best_cut})

    def add(self, prompt_ids: list[int], cache: SlotCache, cuts: dict[int, torch.Tensor]) -> None:
        """Keep the cache of a prompt read to its end (``cache``: one row, the store's own from now on; ``cuts``: the
        micro-step decoder's inputs at its `cuts`, its end's included). It holds its own slots only after the longest
        cut of a kept prompt it begins with; it replaces the kept prompts it holds whole that no other reads on from,
        and is not kept where a kept one holds it whole; the least recently used go while the store holds more than
        ``max_bytes``."""
        if len(prompt_ids) not in cuts or cache.batch_size != 1 or cache.num_slots != len(prompt_ids):
            raise HamburgerError("a kept prompt needs its own one-row cache of one slot per token and its end's inputs")
        key = _key(prompt_ids)
        holder = next((k for k in self._kept if k.holds(key)), None)
        if holder is not None:  # (a kept prompt begins with this one and can be cut where it ends)
            self._use(holder)
            return
        # the kept prompt whose start this one holds in common (a cache of another kind is kept whole)
        start, shared = self._longest(key, [k for k in self._kept if k.cache.plain()] if cache.plain() else [])
        while start is not None and start.start is not None and shared <= start.shared:
            start = start.start  # (the kept prompt that holds those slots itself)
        if start is not None:
            cache.drop_first(shared)
            cuts = {c: t for c, t in start.cuts.items() if c <= shared} | {c: t for c, t in cuts.items() if c > shared}
        size = cache.kv_bytes() + sum(t.numel() * t.element_size() for c, t in cuts.items() if c > shared)
        if size > self.max_bytes:
            return
        kept = _Kept(key, cache, cuts, size, start, shared)
        for k in [k for k in self._kept if not k.readers and k is not start and kept.holds(k.key)]:
            self._forget(k)
        if start is not None:
            start.readers += 1
        self._kept[kept] = None
        self._bytes += kept.bytes
        self._use(kept)
        while self.bytes > self.max_bytes:
            self._forget(next(k for k in self._kept if not k.readers))

    def _longest(self, prompt: bytes, kept: Iterable[_Kept]) -> tuple[_Kept | None, int]:
        """The prompt of ``kept`` with the longest cut ``prompt`` (`_key`) begins with (one token short of it, at most),
        and that cut; (None, 0): none."""
        best, best_cut = None, 0
        for k in kept:
            cut = k.cut(prompt, len(prompt) // 8 - 1, best_cut)
            if cut > best_cut:
                best, best_cut = k, cut
        return best, best_cut

    def _use(self, kept: _Kept) -> None:
        """Make ``kept``, then each prompt it reads on from, the most recently used."""
        while kept is not None:
            self._kept[kept] = self._kept.pop(kept)
            kept = kept.start

    def _forget(self, kept: _Kept) -> None:
        """Drop ``kept`` (which no kept prompt reads on from)."""
        del self._kept[kept]
        self._bytes -= kept.bytes
        if kept.start is not None:
            kept.start.readers -= 1

    def stats(self) -> dict:
        return {"prompts": len(self._kept), "bytes": self.bytes, "max_bytes": self.max_bytes,
                "lookups": self.lookups, "hits": self.hits, "tokens_reused": self.tokens_reused}


def _copy(kept: _Kept, length: int) -> SlotCache:
    """A cache of its own holding the first ``length`` slots of the kept prompt ``kept``."""
    parts = []  # (a kept prompt's own slots, how many of them), last first
    while kept.start is not None:
        if length > kept.shared:
            parts.append((kept.cache, length - kept.shared))
            length = kept.shared
        kept = kept.start
    if parts or kept.cache.plain():
        return joined([(kept.cache, length), *reversed(parts)])
    cache = rows_copy(kept.cache, [0])
    cache.drop_last(len(kept) - length)
    return cache
