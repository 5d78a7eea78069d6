"""The micro loop: one group per row, token 1 from the base's own head (skip path), tokens 2.. from the MSD.

Two implementations give the same tokens, groups, probabilities and finish reasons for greedy decoding:

- `HostMicroLoop` (the default): each micro step's tokens and stop decisions come to the host (one transfer
  per micro step); rows whose group has ended leave the micro batch, and its MSD cache, at once.
- `DeviceMicroLoop`: the whole micro batch runs a fixed number of micro steps; token choice, stop decisions and
  the per-row bookkeeping (every EOS id, max_new_tokens, the context's end, max_steps, the knob) are tensors, a
  `going` mask takes the place of dropping rows, and the MSD writes a static cache (`MicroCache`). One transfer
  to the host per macro step then updates the Python-side rows, and the groups stay on the device for the
  macro step. `compile_micro_loop` compiles it with `torch.compile` (a graph per batch size; CUDA graphs
  with mode "reduce-overhead").
  Sampling draws `max_steps` uniforms per row and macro step from the row's own generator and inverts the
  warped distribution on the device (`sampling.draw_tokens`): a seeded row is reproducible and independent
  of the batch, but it draws other tokens than the host loop (one uniform per token, `sampling.sample`) for the same
  seed.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Callable

import torch
from transformers import DynamicCache

from hamburger.engine.lookup import PromptLookup
from hamburger.engine.penalties import PenaltyBatch, counted
from hamburger.engine.sampling import choice_logits, choose_tokens, draw_tokens
from hamburger.errors import HamburgerError

if TYPE_CHECKING:
    from hamburger.core.model import HamburgerModel
    from hamburger.engine.generate import _Row

ANSWER_LOOKUP = PromptLookup(tokens=1, ngram=3, min_ngram=3)  # `micro_lookup`: the answer's own continuation
Trace = Callable[["_Row", torch.Tensor], None]  # gets each emitted token's logits, for rows that keep them (`traced`)
_COMPILED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> compiled `micro_steps`


def compile_micro_loop(model: HamburgerModel, mode: str | None = None, backend: str = "inductor") -> None:
    """Compile the device micro loop for ``model`` (used by every `Generation(micro_loop="device")` on it):
    the micro steps are unrolled into one graph per batch size (always ``max_steps`` steps, masked)."""
    _COMPILED[model] = torch.compile(micro_steps, mode=mode, backend=backend, dynamic=False, fullgraph=True)


class MicroCache:
    """The MSD's static cache: every layer's keys and values allocated once for ``length`` positions (on the
    first write) and written in place, each write after the previous one (the decoder layers' `update` call).
    Attention reads the written part, a view of fixed shape per micro step: no mask over unwritten positions,
    so the attention computes exactly what it computes on a growing cache."""

    def __init__(self, length: int):
        self.length = length
        self.keys: dict[int, torch.Tensor] = {}
        self.values: dict[int, torch.Tensor] = {}
        self.filled: dict[int, int] = {}

    def update(self, key: torch.Tensor, value: torch.Tensor, layer_idx: int, *args, **kwargs):
        if layer_idx not in self.keys:
            self.keys[layer_idx] = key.new_zeros(*key.shape[:2], self.length, key.shape[3])
            self.values[layer_idx] = value.new_zeros(*value.shape[:2], self.length, value.shape[3])
            self.filled[layer_idx] = 0
        at, n = self.filled[layer_idx], key.shape[2]
        self.keys[layer_idx][:, :, at:at + n] = key
        self.values[layer_idx][:, :, at:at + n] = value
        self.filled[layer_idx] = at + n
        return self.keys[layer_idx][:, :, :at + n], self.values[layer_idx][:, :, :at + n]


def micro_steps(model: HamburgerModel, hidden: torch.Tensor, features: torch.Tensor, state: torch.Tensor,
                eos: torch.Tensor, steps: int, sample: bool, trace: bool, penalties: PenaltyBatch | None = None):
    """``steps`` micro steps for every row, no host sync -> (tokens [B, steps], probs, p_continue (float32),
    going [B, steps] (token j is part of the row's group), logits [steps, B, V] or None).

    ``state`` [B, 8 + max_steps] float64, per row: the most tokens this group may have, the knob's threshold on
    -stop_logit, the least probability of a micro token (`sampling.knob_gates`), whether EOS ids end the row,
    temperature, top_k, top_p, min_p, then one uniform per micro step. ``penalties``: the rows'
    (`engine/penalties.py`), whose counts grow with each micro step's tokens."""
    b, m = features.shape[:2]
    limit, threshold, floor, eos_on = state[:, 0], state[:, 1], state[:, 2], state[:, 3] > 0
    cache = MicroCache(m + steps - 1)
    going = torch.ones(b, dtype=torch.bool, device=hidden.device)
    tokens_, probs_, continue_, going_, logits_ = [], [], [], [], []
    counts = None if penalties is None else penalties.counts
    for s in range(steps):
        logits = model.decode_logits(hidden).float()
        chosen_from = logits if penalties is None else penalties.adjust(logits, counts)
        tokens = draw_tokens(chosen_from, state[:, 4], state[:, 5], state[:, 6], state[:, 8 + s],
                             state[:, 7]) if sample else chosen_from.argmax(-1)
        if penalties is not None:
            counts = counted(counts, tokens)
        embeddings = model.embed(tokens)
        stop_logits = model.stop_head(hidden, embeddings).float()
        probs = logits.softmax(-1).gather(1, tokens[:, None])[:, 0]
        if s:  # a micro token the MSD doubts ends the group before it
            going = going & (probs.double() >= floor)
        tokens_.append(tokens)
        probs_.append(probs)
        continue_.append(torch.sigmoid(-stop_logits))
        going_.append(going)
        if trace:
            logits_.append(logits)
        ended = (eos_on & torch.isin(tokens, eos)) | (limit <= s + 1) | (-stop_logits.double() < threshold)
        going = going & ~ended
        if s + 1 < steps:
            x = embeddings[:, None] if s else torch.cat([features, embeddings[:, None]], 1)
            hidden = model.decoder(x, cache, m + s if s else 0)[:, -1]
    return (torch.stack(tokens_, 1), torch.stack(probs_, 1), torch.stack(continue_, 1), torch.stack(going_, 1),
            torch.stack(logits_) if trace else None)


def copies(row: _Row) -> bool:
    """Whether `micro_lookup` may copy the row's own earlier text into it: greedy rows whose choices nothing adjusts (a
    copy is a repeat, which penalties may discourage and a schema may not allow)."""
    return row.cfg.greedy and not row.adjusts


class HostMicroLoop:
    """The micro loop with a host decision per micro step; rows whose group has ended leave the micro batch. (``eos``
    is the device loop's: here each row's `ends` end it.)"""

    def __init__(self, model: HamburgerModel, eos: list[int], trace: Trace | None = None):
        self.model, self.trace = model, trace

    def __call__(self, hidden: torch.Tensor, features: torch.Tensor, rows: list[_Row]) -> None:
        """Emit one group per row into its `group` (the macro step rebuilds the tensors from the rows)."""
        model = self.model
        max_steps, m = model.config.max_steps, features.shape[1]
        for r in rows:
            r.group = []
        live = list(rows)  # rows whose group is still going, in micro-batch order
        msd_cache = DynamicCache()
        step = 0
        lookup = model.config.micro_lookup > 0
        copy_only: set[int] = set()  # rows that go on only for a copy (`micro_lookup_continues`), by id
        while True:
            logits = model.decode_logits(hidden).float()
            tokens = choose_tokens(choice_logits(logits, [r.adjusts for r in live]), [r.cfg for r in live],
                                   [r.generator for r in live])
            copied = self._copy(logits, tokens, live) if step and lookup else ()
            token_embeddings = model.embed(tokens)
            stop_logits = model.stop_head(hidden, token_embeddings).float()
            probs = logits.softmax(-1).gather(1, tokens[:, None])[:, 0]
            step += 1
            values = zip(live, tokens.tolist(), stop_logits.tolist(), torch.sigmoid(-stop_logits).tolist(),
                         probs.tolist())
            keep = []
            for b, (row, t, s, c, p) in enumerate(values):
                # the MSD doubts this micro token (or the row went on for a copy it did not get): the group ends
                if step > 1 and (p < row.floor or id(row) in copy_only) and b not in copied:
                    continue
                if self.trace and row.traced:
                    self.trace(row, logits[b])
                row.take(t, p, c, model.context_length)
                copy_only.discard(id(row))
                if row.done or len(row.group) >= max_steps:
                    continue
                if -s >= row.threshold:
                    keep.append(b)
                elif lookup and model.config.micro_lookup_continues and copies(row) and \
                        row.threshold < math.inf and ANSWER_LOOKUP.propose(row.tokens, 1):
                    # the stop head would end it: only a copy may join (never at knob 1.0: the base itself)
                    keep.append(b)
                    copy_only.add(id(row))
            if not keep:
                return None
            if len(keep) < len(live):
                index = torch.tensor(keep, device=tokens.device)
                features, token_embeddings = features[index], token_embeddings[index]
                msd_cache.batch_select_indices(index)
                live = [live[b] for b in keep]
            x = token_embeddings[:, None]
            if step == 1:
                x = torch.cat([features, x], 1)
            hidden = model.decoder(x, msd_cache, 0 if step == 1 else m + step - 1)[:, -1]

    def _copy(self, logits: torch.Tensor, tokens: torch.Tensor, live: list[_Row]) -> set[int]:
        """The model's `micro_lookup` q: each row that `copies` whose answer's last three tokens occurred earlier in it
        takes the token that followed their latest occurrence instead of the MSD's top token if the MSD gives it
        probability >= q (in place in ``tokens``); returns the batch positions that took one, which pass the token
        gate (the stop head still judges them)."""
        q, copied = self.model.config.micro_lookup, set()
        probs = None
        for b, row in enumerate(live):
            proposal = ANSWER_LOOKUP.propose(row.tokens, 1) if copies(row) else []
            if proposal:
                probs = logits.softmax(-1) if probs is None else probs
                if float(probs[b, proposal[0]]) >= q:
                    tokens[b] = proposal[0]
                    copied.add(b)
        return copied


class DeviceMicroLoop:
    """The micro loop on the device: fixed micro steps with masks, one transfer to the host per macro step."""

    def __init__(self, model: HamburgerModel, eos: list[int], trace: Trace | None = None):
        self.model, self.trace = model, trace
        self.eos = torch.tensor(eos or [-1], device=model.device)

    def _state(self, rows: list[_Row], sample: bool) -> tuple[torch.Tensor, int]:
        """(the per-row inputs of `micro_steps` as one tensor, sent to the device in one copy; the largest limit)."""
        model = self.model
        max_steps, context = model.config.max_steps, model.context_length
        state = []
        for r in rows:
            n = len(r.tokens)  # the most tokens this group may have: 1 for a cancelled row
            limit = 1 if r.done else min(max_steps, r.cfg.max_new_tokens - n, context - len(r.prompt_ids) - n)
            entry = [limit, r.threshold, r.floor, 0.0 if r.cfg.ignore_eos else 1.0]
            if sample:
                greedy = r.cfg.greedy
                entry += [r.cfg.temperature, r.cfg.top_k, r.cfg.top_p, r.cfg.min_p]
                entry += [0.0] * max_steps if greedy else \
                    torch.rand(max_steps, generator=r.generator, dtype=torch.float64).tolist()
            state.append(entry)
        longest = max(int(entry[0]) for entry in state)
        state = torch.tensor(state, dtype=torch.float64)
        if model.device.type == "cuda":
            return state.pin_memory().to(model.device, non_blocking=True), longest
        return state.to(model.device), longest

    def __call__(self, hidden: torch.Tensor, features: torch.Tensor, rows: list[_Row]
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """Emit one group per row; returns the groups on the device: (tokens [B, steps] padded with 0, sizes [B])."""
        model = self.model
        compiled = _COMPILED.get(model)
        sample = any(not r.cfg.greedy for r in rows)
        state, longest = self._state(rows, sample)
        if all(r.threshold == math.inf for r in rows):
            steps = 1  # every group is one token
        else:  # compiled: always max_steps (one graph per batch size); eager: no step that no row can use
            steps = model.config.max_steps if compiled else longest
        run = compiled or micro_steps
        if compiled and hidden.device.type == "cuda":
            torch.compiler.cudagraph_mark_step_begin()  # the previous replay's outputs are consumed by now
        traced = self.trace is not None and any(r.traced for r in rows)
        if any(r.grammar is not None or r.bad_words is not None for r in rows):
            raise HamburgerError("a JSON schema, a grammar or bad words need micro_loop 'host' (their masks are made "
                                 "on the host after each token)")
        penalties = PenaltyBatch.stack([r.penalties for r in rows], model.vocab_size, model.device)
        tokens, probs, p_continue, going, logits = run(model, hidden, features, state, self.eos, steps, sample, traced,
                                                       penalties)
        # The one host sync of the macro step: every row's tokens, probabilities and mask at once.
        host = torch.stack([tokens.double(), probs.double(), p_continue.double(), going.double()]).cpu().tolist()
        for b, r in enumerate(rows):
            r.group = []
            for j in range(steps):
                if not host[3][b][j]:
                    break
                r.take(int(host[0][b][j]), host[1][b][j], host[2][b][j], model.context_length)
                if traced and r.traced:
                    self.trace(r, logits[j, b])
                if r.done:  # (a stop token id ends the row here; the device's mask knows the end-of-sequence ids only)
                    break
        return (tokens * going).clone(), going.sum(1)
