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
from the prompt's last position. The store holds up to ``max_bytes`` of caches and forgets the least recently used;
a prompt that extends a kept one (a conversation's next turn) takes its place. A store holds one engine's prompts
(`bind`): another model, mode or folding reads prompts otherwise, or keeps another kind of cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from hamburger.engine.cache import SlotCache, rows_copy
from hamburger.errors import HamburgerError

BLOCK = 16  # prompt tokens between the places a kept prompt can be cut short (vLLM's block size)
PROMPT_CACHE_MIB = 256  # `serve`'s and `chat`'s default store: about 5,750 tokens of SmolLM2-135M's in fp32


@dataclass(eq=False)  # (one is found by identity)
class _Kept:
    tokens: torch.Tensor  # [P] the prompt's token ids, on the CPU
    cache: SlotCache  # one row: the prompt's P slots
    cuts: dict[int, torch.Tensor]  # prompt length -> the micro-step decoder's inputs at its last slot
    bytes: int


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
        self._kept: list[_Kept] = []  # least recently used first
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
        return sum(k.bytes for k in self._kept)

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
        prompt = torch.tensor(prompt_ids, dtype=torch.long)
        best, best_cut = None, 0
        for kept in self._kept:
            n = min(len(kept.tokens), len(prompt) - 1)
            if n <= best_cut:
                continue
            differ = torch.nonzero(kept.tokens[:n] != prompt[:n])
            common = int(differ[0, 0]) if differ.numel() else n
            # (a cache whose sliding layers forgot slots holds what queries after its end see: it is cut nowhere else)
            cut = max((c for c in kept.cuts if c <= common and (c == len(kept.tokens) or not kept.cache.forgotten)),
                      default=0)
            if cut > best_cut:
                best, best_cut = kept, cut
        if best is None:
            return None
        self._kept.remove(best)
        self._kept.append(best)
        cache = rows_copy(best.cache, [0])
        cache.drop_last(len(best.tokens) - best_cut)
        self.hits += 1
        self.tokens_reused += best_cut
        return Hit(cache, best_cut, best.cuts[best_cut][None],
                   {c: inputs for c, inputs in best.cuts.items() if c <= best_cut})

    def add(self, prompt_ids: list[int], cache: SlotCache, cuts: dict[int, torch.Tensor]) -> None:
        """Keep the cache of a prompt read to its end (``cache``: one row, the store's own from now on; ``cuts``: the
        micro-step decoder's inputs at its `cuts`, its end's included). It replaces the kept prompts it begins with
        and can be cut where they end, and is not kept where a kept one holds it so; the least recently used go while
        the store holds more than ``max_bytes``."""
        tokens = torch.tensor(prompt_ids, dtype=torch.long)
        if len(tokens) not in cuts or cache.batch_size != 1 or cache.num_slots != len(tokens):
            raise HamburgerError("a kept prompt needs its own one-row cache of one slot per token and its end's inputs")
        size = cache.kv_bytes() + sum(t.numel() * t.element_size() for t in cuts.values())
        if size > self.max_bytes:
            return
        holder = next((k for k in self._kept if _holds(k.tokens, k.cuts, tokens)), None)
        if holder is not None:  # (a kept prompt begins with this one and can be cut where it ends)
            self._kept.remove(holder)
            self._kept.append(holder)
            return
        self._kept = [k for k in self._kept if not _holds(tokens, cuts, k.tokens)]
        self._kept.append(_Kept(tokens, cache, cuts, size))
        while self.bytes > self.max_bytes:
            self._kept.pop(0)

    def stats(self) -> dict:
        return {"prompts": len(self._kept), "bytes": self.bytes, "max_bytes": self.max_bytes,
                "lookups": self.lookups, "hits": self.hits, "tokens_reused": self.tokens_reused}


def _holds(tokens: torch.Tensor, cuts: dict, other: torch.Tensor) -> bool:
    """Whether a prompt of ``tokens`` with ``cuts`` begins with ``other`` and can be cut where it ends."""
    n = len(other)
    return n in cuts and n <= len(tokens) and torch.equal(tokens[:n], other)
