"""The base model's answers to many prompts, continuously batched: what `distill` writes with.

A batch of ``batch_size`` rows decodes one token a row per forward. Every ``refill_every`` forwards the rows that ended
(at an EOS id or at ``max_new_tokens``) leave the batch and waiting prompts take their places, read in one forward of
their own and joined to the running rows' KV cache (`SlotCache.merge`: both left-padded to a common slot count, every
row at its own rotary positions). So the batch stays full until the prompts run out, where fixed batches shrink as
their rows end and decode their longest answer at a few rows a forward (a sampled draw's answers are 139 tokens on
average, and 23% of them run to the 256-token cap: experiments/2026-12-07-continuous-distill/).

The forward is the base's own math run by the lean pass (`core/lean.LeanStack`, transformers' layers where it does not
apply) on a cache that writes each step in place (`engine/cache.SpareSlotsLayer`); the head's output becomes the
base's logits (`core/final_logits.FinalLogits`), cast to float32 as transformers' ``generate`` casts them. Each row
draws its tokens with its own (temperature, top_p) and generator (`sampling.draw_rows`, one uniform a token, all of
them drawn as the row joins: the same stream, without a generator call per row and step), so its answer never depends
on the rows beside it; at temperature 0 it is the argmax, HF ``generate``'s greedy answer.

With ``entropies`` each answer also carries, for every token it drew (its EOS too), the entropy of the base's
distribution it was drawn from (at temperature 1, whatever the row's draw) and that token's probability under it: what
`segment` cuts by, from the forward that wrote the answer instead of a second one over it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import torch

from hamburger.core.final_logits import FinalLogits
from hamburger.core.lean import LeanStack
from hamburger.core.masks import as_read_by
from hamburger.core.modules import base_decoder_stack
from hamburger.data.segment import log_softmax_entropy
from hamburger.engine.cache import SlotCache
from hamburger.engine.sampling import draw_rows

REFILL_EVERY = 8  # forwards between refills: rows that ended wait at most this many forwards for their places


@dataclass
class Request:
    """One answer to write: ``prompt`` token ids and its draw (temperature, top_p, seed); ``key`` names it."""

    key: object
    prompt: list[int]
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


@dataclass
class Answer:
    """A request's answer: token ids without the EOS, why it ended ("eos" | "length") and the EOS id that ended it;
    with `answers`' ``entropies``, the entropy (nats) and probability of each token drawn, the EOS's last."""

    key: object
    tokens: list[int]
    finish_reason: str
    stop_token_id: int | None
    entropies: list[float] | None = None
    token_probs: list[float] | None = None


@dataclass
class _Row:
    request: Request
    uniforms: list[float]  # its draws' uniforms, one a token (none at temperature 0)
    position: int  # the rotary position of its next input (the token it drew last, not yet in the cache)
    tokens: list[int] = field(default_factory=list)
    ended: Answer | None = None
    entropies: list[float] | None = None  # (with `answers`' entropies) one a token drawn, the EOS's too
    token_probs: list[float] | None = None


class BaseStep:
    """One forward of a base causal LM on a `SlotCache`: the last position's logits (float32) of each row."""

    def __init__(self, base):
        self.base = base
        self.stack = base_decoder_stack(base)
        self.lean = LeanStack.for_stack(self.stack)
        self.head = base.get_output_embeddings()
        self.final = FinalLogits.of(base)
        self.embed = base.get_input_embeddings()

    def __call__(self, ids: torch.Tensor, positions: torch.Tensor, cache: SlotCache,
                 valid: torch.Tensor) -> torch.Tensor:
        """``ids``, ``positions``, ``valid`` [B, S]: the new slots of each row (``valid`` False: left padding)."""
        mask = cache.extend(valid, positions)
        x = self.embed(ids)
        if self.lean is not None:
            hidden = self.lean(x, positions, mask, cache.kv, ())[0]
        else:
            read = as_read_by(mask, self.stack.config._attn_implementation, x.dtype)
            hidden = self.stack(inputs_embeds=x, position_ids=positions, attention_mask=read, past_key_values=cache.kv,
                                use_cache=True).last_hidden_state
        return self.final(self.head(hidden[:, -1])).float()


def answers(base, requests: Iterable[Request], eos: list[int], max_new_tokens: int, batch_size: int = 32,
            refill_every: int = REFILL_EVERY, step: BaseStep | None = None, entropies: bool = False
            ) -> Iterator[list[Answer]]:
    """Decode ``requests`` with ``base`` (a HF causal LM in eval mode), ``batch_size`` rows at a time, taken in their
    order; yields the answers that ended before each refill (at most ``batch_size``, in their rows' order), with each
    token's entropy and probability where ``entropies``."""
    if batch_size < 1 or max_new_tokens < 1 or refill_every < 1:
        raise ValueError("need batch_size, max_new_tokens and refill_every >= 1")
    step = step or BaseStep(base)
    device, eos_set = next(base.parameters()).device, set(eos)
    waiting, rows, cache = deque(requests), [], None
    with torch.inference_mode():
        while waiting or rows:
            done = [row.ended for row in rows if row.ended]
            if done:
                keep = [i for i, row in enumerate(rows) if not row.ended]
                rows = [rows[i] for i in keep]
                if rows:
                    cache.select_rows(torch.tensor(keep, device=device))
                    cache.compact_if_holey()
                else:
                    cache = None
            joining = [waiting.popleft() for _ in range(min(batch_size - len(rows), len(waiting)))]
            if joining:
                new_rows, new_cache = _read_prompts(step, joining, device, eos_set, max_new_tokens, entropies)
                rows += new_rows
                if cache is None:
                    cache = new_cache
                else:
                    cache.merge(new_cache)
                    cache.compact_if_holey()
            if done:
                yield done
            for _ in range(refill_every):
                if all(row.ended for row in rows):
                    break
                _decode(step, rows, cache, device, eos_set, max_new_tokens)


def _read_prompts(step: BaseStep, requests: list[Request], device, eos: set[int], max_new_tokens: int,
                  entropies: bool):
    """The rows of ``requests``, their prompts read in one forward (left-padded) and their first tokens drawn."""
    width = max(len(r.prompt) for r in requests)
    ids = torch.tensor([[0] * (width - len(r.prompt)) + r.prompt for r in requests], device=device)
    valid = torch.tensor([[False] * (width - len(r.prompt)) + [True] * len(r.prompt) for r in requests],
                         device=device)
    positions = (valid.long().cumsum(1) - 1).clamp(min=0)
    cache = SlotCache(step.base.config, len(requests), device=device)
    logits = step(ids, positions, cache, valid)
    rows = [_Row(r, _uniforms(r, max_new_tokens), len(r.prompt)) for r in requests]
    if entropies:
        for row in rows:
            row.entropies, row.token_probs = [], []
    _take(rows, logits, eos, max_new_tokens)
    return rows, cache


def _decode(step: BaseStep, rows: list[_Row], cache: SlotCache, device, eos: set[int], max_new_tokens: int) -> None:
    """One forward of every row (an ended one's too, until it leaves: its input is its last token again)."""
    ids = torch.tensor([[row.tokens[-1] if row.tokens else row.request.prompt[-1]] for row in rows], device=device)
    positions = torch.tensor([[row.position] for row in rows], device=device)
    logits = step(ids, positions, cache, torch.ones(len(rows), 1, dtype=torch.bool, device=device))
    for row in rows:
        row.position += 1
    _take(rows, logits, eos, max_new_tokens)


def _take(rows: list[_Row], logits: torch.Tensor, eos: set[int], max_new_tokens: int) -> None:
    """Each row still decoding draws its next token from its logits (a row of ``logits`` per row)."""
    live = [i for i, row in enumerate(rows) if not row.ended]
    if not live:
        return
    picked = _draw([rows[i] for i in live], logits[live])
    if rows[live[0]].entropies is not None:
        _note_entropies([rows[i] for i in live], logits[live], picked)
    for i, token in zip(live, picked):
        row = rows[i]
        if token in eos:
            row.ended = Answer(row.request.key, row.tokens, "eos", token, row.entropies, row.token_probs)
            continue
        row.tokens.append(token)
        if len(row.tokens) == max_new_tokens:
            row.ended = Answer(row.request.key, row.tokens, "length", None, row.entropies, row.token_probs)


def _note_entropies(rows: list[_Row], logits: torch.Tensor, picked: list[int]) -> None:
    """Append to each row the entropy of its logits' distribution and the probability of the token it drew, as
    `segment.compute_entropies` computes them from its own forward."""
    logp, entropy = log_softmax_entropy(logits)
    prob = logp.gather(1, torch.tensor(picked, device=logits.device)[:, None])[:, 0].double().exp()
    for row, e, p in zip(rows, entropy.tolist(), prob.tolist()):
        row.entropies.append(e)
        row.token_probs.append(p)


def _uniforms(request: Request, max_new_tokens: int) -> list[float]:
    """The uniforms of a request's draws, from a generator seeded by its seed (as many as it may draw tokens)."""
    if request.temperature == 0:
        return []
    generator = torch.Generator().manual_seed(request.seed)
    return torch.rand(max_new_tokens, generator=generator, dtype=torch.float64).tolist()


def _draw(rows: list[_Row], logits: torch.Tensor) -> list[int]:
    """The rows' tokens: the argmax where every row is greedy, else each row's own draw (`draw_rows`)."""
    if all(row.request.temperature == 0 for row in rows):
        return logits.argmax(-1).tolist()
    dev = logits.device
    uniform = torch.tensor([row.uniforms[len(row.tokens)] if row.uniforms else 0.0 for row in rows],
                           dtype=torch.float64)
    temperature = torch.tensor([row.request.temperature for row in rows], dtype=torch.float64, device=dev)
    top_p = torch.tensor([row.request.top_p for row in rows], dtype=torch.float64, device=dev)
    top_k = torch.zeros(len(rows), dtype=torch.long, device=dev)
    return draw_rows(logits, temperature, top_k, top_p, uniform.to(dev)).tolist()
