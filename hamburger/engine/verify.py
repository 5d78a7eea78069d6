"""Lossless decoding: the micro-step decoder drafts, the base model verifies (speculative decoding).

Each step feeds the base the row's last emitted token and the tokens the MSD drafted after it, as
ordinary one-token positions on an ordinary token-level cache (no merged slots). The base's own
predictions at those positions decide how many drafts to keep: greedy keeps drafts while they equal
the base's argmax; sampling accepts draft d with probability min(1, p(d)/q(d)) and on a rejection
draws from norm(max(0, p - q)) (Leviathan et al. 2023), so the output follows the base's distribution
exactly. Either way one more token comes from the base at the first rejected (or the bonus) position,
the rejected positions leave the cache, and the MSD drafts again from the base's features (taps) at the
last kept position. The greedy output is the base's greedy output, token for token.

Draft length: by the stop head (draft while 1 - p_stop >= confidence, at most max_steps - 1 tokens),
or a fixed ``draft`` count. Rows of a batch keep different numbers of tokens per step: every row's new
slots are written, the rejected ones marked invalid in the attention mask, the slots no row kept are
cropped, and the cache is compacted when holes pile up. `VerifyGeneration` has the interface of
`Generation` (iterate for streaming events, `add` and `cancel` rows, `results`); `verify_generate`
runs one prompt.

**Folding** (``fold``, a `folding.Folding`; not lossless): older answer tokens leave their one-token slots for one
merged slot per group (the base's own entropy cut, as training data is cut, or the tokens each forward kept), fed first
in a later forward (`engine/folding.py`). The cache then holds one slot per group of the folded history plus the
recent tokens one by one, and every token is still the base's own choice (greedy: its argmax; sampling: the accept
test) given that cache: only the reading of the folded history differs from the base's. The MSD only drafts. With
the fold's ``bits`` the tokens it takes out stay, stored at 8 or 4 bits (`engine/quantized.py`): the base reads every
token of the history, the older ones coarser.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Iterator

import torch
from transformers import DynamicCache

from hamburger.core.config import check_full_heads
from hamburger.core.model import HamburgerModel
from hamburger.core.modules import Drafter
from hamburger.core.packing import group_tensors
from hamburger.engine.cache import SlotCache
from hamburger.engine.folding import Folding, FoldState
from hamburger.engine.quantized import QuantizedHistoryCache
from hamburger.engine.full_heads import FullHeadCache
from hamburger.engine.generate import Generation, GenerationResult, GroupEvent, _Row, join_batch
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prediction import PREDICTION_MOST, PREDICTION_TOKENS, Prediction
from hamburger.engine.ngrams import NgramDrafts
from hamburger.engine.prompt_cache import PromptCache
from hamburger.engine.sampling import (DecodingConfig, along, choice_logits, choose_tokens, draw_each, sample,
                                       warped_probs)
from hamburger.errors import HamburgerError

VERIFY_CONFIDENCE = 0.3  # stop-head threshold for drafting when a request gives none (a wrong draft costs time only)
SMALL_HEAD_ROWS = 8  # verify logits of up to this many positions use the LM head's fast single-row layout
HEAD_CHUNK = 3  # on a CPU the base's LM head runs on this many positions of a row at a time (`VerifyGeneration`)


@dataclass
class VerifyResult(GenerationResult):
    """A `GenerationResult` whose groups are the tokens kept per base forward, plus draft statistics."""

    drafts: list[int] = field(default_factory=list)  # tokens drafted at each verify step
    accepted: list[int] = field(default_factory=list)  # drafts the base kept at each verify step
    # whether the drafts of each step came without the MSD (prompt lookup, the n-gram table, a schema's forced tokens)
    looked_up: list[bool] = field(default_factory=list)
    predicted: list[bool] = field(default_factory=list)  # whether each step's drafts came from the request's prediction
    folded: bool = False  # decoded with a `Folding` (older tokens may sit in merged slots)

    @property
    def accepted_prediction_tokens(self) -> int:
        """Drafts from the prediction (`DecodingConfig.prediction`) that the base kept."""
        return sum(a for a, p in zip(self.accepted, self.predicted) if p)

    @property
    def rejected_prediction_tokens(self) -> int:
        """Drafts from the prediction that the base did not keep."""
        return sum(d - a for d, a, p in zip(self.drafts, self.accepted, self.predicted) if p)

    def to_dict(self) -> dict:
        return {**super().to_dict(), "accepted_prediction_tokens": self.accepted_prediction_tokens,
                "rejected_prediction_tokens": self.rejected_prediction_tokens}

    def acceptance_by_position(self) -> list[float]:
        """Fraction of steps that drafted an i-th token in which the base kept it (i = 1, 2, ...)."""
        out = []
        for i in range(1, max(self.drafts, default=0) + 1):
            drafted = sum(d >= i for d in self.drafts)
            out.append(sum(a >= i for a in self.accepted) / drafted)
        return out


@dataclass
class _Drafts:
    """One step's drafts of one row: token ids and, when sampling, each draft's distribution q [V]."""

    tokens: list[int] = field(default_factory=list)
    q: list[torch.Tensor] = field(default_factory=list)
    looked_up: bool = False  # made without the MSD (`engine/lookup.py`, `engine/ngrams.py`, a schema's forced tokens)
    predicted: bool = False  # taken from the request's prediction (`engine/prediction.py`)
    # 1 - p_stop after the pending token and after each draft (stop-head drafting only); results report it per
    # emitted token where the stop head judged that token, 0.0 elsewhere
    p_continue: list[float] = field(default_factory=list)


def speculative_accept(logits: torch.Tensor, drafts: _Drafts, cfg: DecodingConfig,
                       generator: torch.Generator | None, start: int = 0) -> tuple[int, int] | None:
    """Base logits [n+1, V] at the pending token and each of n drafts -> (drafts kept, the base's next token).

    Greedy: keep drafts while each equals the base's argmax; the next token is the argmax after them.
    Sampling: keep draft i with probability min(1, p_i(d)/q_i(d)); on a rejection the next token is drawn
    from norm(max(0, p_i - q_i)); if all are kept, from p_n (p, q warped by the same temperature/top-k/top-p).

    ``start`` s: ``logits`` holds only the rows s.. (drafts 0..s-1 were kept by an earlier call); None when every
    draft those rows test was kept and the next token needs rows after them. Tested a chunk of rows at a time, the
    drafts draw the same random numbers, in the same order, as at once.
    """
    n = len(drafts.tokens)
    if cfg.greedy:
        best = logits.argmax(-1).tolist()
        for i, b in enumerate(best, start):
            if i == n or b != drafts.tokens[i]:
                return i, b
        return None
    for i, row in enumerate(logits, start):
        p = warped_probs(row, cfg)
        if i == n:
            return n, sample(p, generator)
        d = drafts.tokens[i]
        q = drafts.q[i]
        if torch.rand((), generator=generator) * q[d] < p[d]:
            continue
        residual = (p - q).clamp(min=0)
        mass = residual.sum()
        probs = residual / mass if mass > 0 else p
        return i, sample(probs, generator)
    return None


class VerifyGeneration(Generation):
    """Lossless generation for a batch of tokenized prompts; iterate it for one event per row and base
    forward (the tokens kept by that forward), then read `results` (`VerifyResult`s).

    ``draft``: None drafts by the stop head at each request's confidence (default `VERIFY_CONFIDENCE`),
    an int drafts exactly that many tokens per step (0 is plain decoding). ``max_draft`` caps the drafts
    per step (default max_steps - 1, the group length the MSD was trained for). ``draft_vocab``: token ids
    the drafts are restricted to (e.g. `draft_vocabulary`): the draft's LM head multiplies only those rows,
    a fraction of the full head's cost; the output stays the base's (the base verifies every token).
    ``prefill_chunk``, ``poll`` and ``trace_logits`` work as in `Generation` (poll runs once per base forward), so the
    server's scheduler runs verify batches like any other. ``fold``: fold older tokens into merged slots (see the
    module's doc; not lossless; the model keeps its adapters, which act at merged slots). ``lookup``: where the text's
    last n-gram occurred before, draft the tokens that followed it (up to ``lookup.tokens``, beyond ``max_draft``)
    instead of asking the MSD (`engine/lookup.py`). ``ngrams``: where the text has no such match, greedy rows draft
    the base's own confident continuations of its last tokens from an n-gram table (`engine/ngrams.py`, e.g. the
    checkpoint's `draft_ngrams`) before asking the MSD (sampled rows leave the base's greedy phrasing, and the MSD's
    drafts, drawn from its own distribution, are kept more often there). ``draft_rows`` N: no row drafts (by the MSD
    or by lookup) in a forward of more than N rows, which then decodes one token per row, as plain decoding does
    (None: always draft). On compute-bound hardware a full batch's draft positions cost more than they save
    (`benchmarks/serve_modes.sh`).
    ``drafter``: the micro-step decoder and stop head that draft (default: the model's ``verify_drafter``, trained for
    these inputs, where it has one, else its own; `modules.Drafter`).
    ``head_chunk``: the base's LM head runs on this many positions of each row at a time, until the row's acceptance
    test is decided (default `HEAD_CHUNK` on a CPU, where a few rows cost about one; all at once elsewhere).
    ``full_heads``: with ``fold``, these (layer, key/value head) pairs keep every slot the fold takes out
    (`engine/full_heads.py`; None: the model's `HamburgerConfig.full_heads`, [] none).
    ``prompt_cache``: as in `Generation` (one per engine: a verify engine's prompt caches hold its kind of cache).
    """

    def __init__(self, model: HamburgerModel, tokenizer, prompts: list[list[int]],
                 configs: DecodingConfig | list[DecodingConfig], draft: int | None = None,
                 max_draft: int | None = None, draft_vocab: torch.Tensor | None = None,
                 prefill_chunk: int | None = None, poll=None, fold: Folding | None = None,
                 trace_logits: bool = False, lookup: PromptLookup | None = None, draft_rows: int | None = None,
                 head_chunk: int | None = None, ngrams: NgramDrafts | None = None, drafter: Drafter | None = None,
                 full_heads: list | None = None, prompt_cache: PromptCache | None = None):
        if draft is not None and draft < 0:
            raise HamburgerError(f"draft must be >= 0, got {draft}")
        if draft_rows is not None and draft_rows < 0:
            raise HamburgerError(f"draft_rows must be >= 0, got {draft_rows}")
        self.draft_rows = draft_rows
        if fold is not None:
            fold.validate(model.config.max_steps)
            if model.config.msd_context:
                raise HamburgerError("fold does not combine with msd_context (the MSD's context would read folded "
                                     "slots)")
        self.fold = fold
        heads = model.config.full_heads if full_heads is None else full_heads
        if fold is not None and fold.bits:  # (every head reads the whole history already)
            if full_heads:
                raise HamburgerError("full heads do not combine with a fold's bits (the store keeps every slot)")
            heads = []
        self.full_heads = check_full_heads(heads, model.base.config) if fold is not None else []
        self.lookup = lookup.validate() if lookup is not None else None
        self.ngrams = ngrams
        if model.config.max_steps < 2 and draft:
            raise HamburgerError("this model has no micro-step decoder to draft with (max_steps 1)")
        self.draft = draft
        self.drafter = drafter if drafter is not None else (
            model.verify_drafter if model.verify_drafter is not None else Drafter.of(model))
        if head_chunk is not None and head_chunk < 1:
            raise HamburgerError(f"head_chunk must be >= 1, got {head_chunk}")
        self.head_chunk = head_chunk or (HEAD_CHUNK if model.device.type == "cpu" else 1 << 30)
        self._draft_head = None
        if draft_vocab is not None:  # [d, n] rows of the LM head for the draft vocabulary, made contiguous once
            head = model.base.get_output_embeddings()
            vocab = draft_vocab.to(model.device).sort().values  # (in vocabulary order: draws as over the full head)
            bias = head.bias[vocab] if getattr(head, "bias", None) is not None else None
            self._draft_head = (vocab, head.weight[vocab].detach().t().contiguous(), bias)
        self.max_draft = max_draft if max_draft is not None else (
            draft if draft is not None else model.config.max_steps - 1)
        super().__init__(model, tokenizer, prompts, configs, prefill_chunk=prefill_chunk, poll=poll,
                         trace_logits=trace_logits, prompt_cache=prompt_cache)

    def _engine_key(self) -> tuple:
        return *super()._engine_key(), self.fold, tuple(map(tuple, self.full_heads))

    def add(self, prompt_ids: list[int], config: DecodingConfig) -> int:
        if config.confidence is None:
            config = replace(config, confidence=VERIFY_CONFIDENCE)
        index = super().add(prompt_ids, config)
        row = self.rows[index]
        row.pending, row.fed, row.drafts, row.accepted, row.looked_up, row.predicted = None, 0, [], [], [], []
        row.prediction = Prediction(list(config.prediction)) if config.prediction else None
        row.folding = FoldState(self.fold, self.model.base.config.vocab_size) if self.fold else None
        return index

    def _new_cache(self, batch_size: int, capacity: int | None = None) -> SlotCache:
        cache = self._cache_of_mode(batch_size, capacity)
        if self.fold is not None and self.fold.keep == "merged":  # (a folded group comes back at its old position)
            cache.forgetting = []
        return cache

    def _cache_of_mode(self, batch_size: int, capacity: int | None) -> SlotCache:
        """A fold's history store, full heads' split cache, or the plain one."""
        if self.full_heads and self.model._lean_stack() is None:
            raise HamburgerError(f"full heads need the lean pass (`core/lean.py`), which {type(self.model.base).__name__}'s "
                                 f"layers do not take (other parts, or `lean` off)")
        if self.fold is not None and self.fold.bits:
            if capacity:
                raise HamburgerError("a fold's bits need the dynamic KV cache")
            return QuantizedHistoryCache(self.model.base.config, batch_size, self.model.device, self.fold.bits,
                                         self.fold.value_bits, self.fold.rotate)
        if not self.full_heads:
            return super()._new_cache(batch_size, capacity)
        if capacity:
            raise HamburgerError("full heads need the dynamic KV cache")
        return FullHeadCache(self.model.base.config, batch_size, self.model.device, self.full_heads)

    # ------------------------------------------------------------------ driver
    def _run(self) -> Iterator[GroupEvent]:
        rows = self.rows
        cache, hidden, features, active = None, None, None, []  # cache row i holds request active[i]
        while True:
            for new, *joining in self._prefill_step():  # rows that join: emit their first token (the base's)
                self._first_tokens(joining[1], [rows[i] for i in new])
                now = time.perf_counter()
                for i in new:
                    rows[i].prefill_s, rows[i].fed = now - rows[i].started, len(rows[i].prompt_ids)
                cache, hidden, features = join_batch((cache, hidden, features), joining)
                active += new
                yield from self._events(cache, active, new)
            if self.poll:  # once per base forward (and between prefill chunks): the caller adds and cancels rows
                self.poll()
            keep = [pos for pos, i in enumerate(active) if not rows[i].done]
            if not keep:
                if not (self._pending or self._chunking):
                    return
                cache, hidden, features, active = None, None, None, []
                continue
            if len(keep) < len(active):
                index = torch.tensor(keep, device=self.model.device)
                cache.select_rows(index)
                hidden, features = hidden[index], features[index]
                active = [active[pos] for pos in keep]
            clock = time.perf_counter()
            live = [rows[i] for i in active]
            drafts = self._draft(hidden, features, live)
            hidden, features = self._verify(cache, live, drafts, features)
            elapsed = time.perf_counter() - clock
            for r in live:
                r.forwards += 1
                r.decode_s += elapsed
            self._keep_answers(cache, active, features)  # (before their events: a caller may release them then)
            yield from self._events(cache, active, active)

    def _keep_answers(self, cache: SlotCache, active: list[int], features: torch.Tensor) -> None:
        """Lossless verify mode's cache holds a row's prompt and answer one slot per token, as a plain decode's: the
        prompt cache, if any, keeps that of each row that finished (not cancelled), its prompt and every answer token
        but the last (never fed), so a chat's next turn reads neither again where its template writes the answer back
        as the same tokens. It is cut at its end (``features``: the MSD's inputs at each row's last kept slot) or at
        the prompt's cuts."""
        if self.prompt_cache is None or self.fold is not None:
            return
        for pos, i in enumerate(active):
            row = self.rows[i]
            if row.done and row.reason != "cancelled" and len(row.tokens) > 1:
                tokens = row.prompt_ids + row.tokens[:-1]
                self._keep(tokens, cache, {**row.cuts, len(tokens): features[pos].clone()}, pos)

    def _events(self, cache: SlotCache, active: list[int], which: list[int]) -> Iterator[GroupEvent]:
        """Close the step's group of each row in ``which``; record the KV use of rows that finished."""
        events = [self._close_group(self.rows[i], i) for i in which]
        self._measure_kv(cache, active, [pos for pos, i in enumerate(active) if self.rows[i].done and i in which])
        yield from events

    def _result(self, row: _Row) -> VerifyResult:
        base = asdict(super()._result(row))
        base["kv_slots"] = row.kv_slots
        return VerifyResult(**base, drafts=row.drafts, accepted=row.accepted, looked_up=row.looked_up,
                            predicted=row.predicted, folded=self.fold is not None)

    # ------------------------------------------------------------------ emitting
    def _emit(self, row: _Row, tokens: list[int], probs: list[float], p_continue: list[float]) -> None:
        """Record the tokens one base forward decided; stop at an EOS id, max_new_tokens or the context."""
        row.group = []
        for t, p, c in zip(tokens, probs, p_continue):
            row.take(t, p, c, self.model.context_length)
            if row.done:
                return
        row.pending = tokens[-1]

    def _first_tokens(self, hidden: torch.Tensor, rows: list[_Row]) -> None:
        """The first token of each new row: the base's own choice after the prompt."""
        logits = self.model.decode_logits(hidden).float()
        tokens = choose_tokens(choice_logits(logits, [r.adjusts for r in rows]), [r.cfg for r in rows],
                               [r.generator for r in rows])
        probs = logits.softmax(-1).gather(1, tokens[:, None])[:, 0].tolist()
        for b, (r, t, p) in enumerate(zip(rows, tokens.tolist(), probs)):
            self._emit(r, [t], [p], [0.0])
            if r.folding:
                r.folding.chose(logits[b:b + 1], [t])
            if r.traced:
                self._trace(r, logits[b])

    def _room(self, row: _Row) -> int:
        """Most drafts max_new_tokens and the context leave room for (the base adds one token after them)."""
        return min(row.cfg.max_new_tokens - len(row.tokens),
                   self.model.context_length - len(row.prompt_ids) - len(row.tokens)) - 1

    def _budget(self, row: _Row) -> int:
        """Most MSD drafts this step: max_draft, within the room left."""
        return max(0, min(self.max_draft, self._room(row)))

    def _look_up(self, row: _Row, drafts: _Drafts, batch: int) -> bool:
        """Draft without the MSD into ``drafts``: the tokens the row's JSON schema forces next (the base's test under
        the schema's mask keeps them, unless it would write the same text in other tokens), else from the request's
        prediction where the answer follows it (`_prediction_room`), else by prompt lookup where the row's text has a
        match, else (greedy rows) from the n-gram table where it knows the text's last tokens; whether any did."""
        table = self.ngrams if row.cfg.greedy else None
        room = max(0, self._room(row))
        tokens = row.grammar.forced()[:room] if row.grammar is not None else []
        if not tokens and row.prediction is not None:
            tokens = row.prediction.propose(row.tokens, min(room, self._prediction_room(batch)))
            drafts.predicted = bool(tokens)
        if not tokens and self.lookup is None and table is None:
            return False
        text = row.prompt_ids + row.tokens
        if not tokens and self.lookup:
            tokens = self.lookup.propose(text, room)
        if not tokens and table is not None:
            tokens = table.propose(text, room)
        tokens = self._through_eos(row, tokens)
        if not tokens:
            return False
        drafts.tokens, drafts.looked_up = tokens, True
        if not row.cfg.greedy:  # a lookup draft is certain: q is one-hot
            vocab, device = self.model.vocab_size, self.model.device
            drafts.q = [torch.zeros(vocab, device=device).index_fill_(0, torch.tensor([t], device=device), 1.0)
                        for t in tokens]
        return True

    def _prediction_room(self, batch: int) -> int:
        """The most drafts a row of ``batch`` takes from its prediction in one step: its share of `PREDICTION_MOST`
        (at least `PREDICTION_TOKENS`), so one row's long drafts do not widen every row's forward far. With a fold,
        `PREDICTION_TOKENS`: a forward's later positions read the history a token-by-token decode would have folded by
        then, so long drafts move the answer from the one without a prediction (7 of 8 dev answers stayed it with
        drafts of up to 64, 8 of 8 with 10: experiments/2026-12-08-prediction-growth/)."""
        return PREDICTION_TOKENS if self.fold is not None else max(PREDICTION_TOKENS, PREDICTION_MOST // batch)

    def _ends(self, row: _Row, token: int) -> bool:
        """Whether ``token`` would end ``row`` (one of its `ends`): no draft after it could be kept."""
        return token in row.ends

    def _through_eos(self, row: _Row, tokens: list[int]) -> list[int]:
        """``tokens`` up to the first that would end the row, included (a prompt lookup that matches the chat
        template's turn end would otherwise draft the next turn's header)."""
        end = next((i for i, t in enumerate(tokens) if self._ends(row, t)), None)
        return tokens if end is None else tokens[:end + 1]

    # ------------------------------------------------------------------ drafting
    def _draft(self, hidden: torch.Tensor, features: torch.Tensor, rows: list[_Row]) -> list[_Drafts]:
        """The drafts after each row's pending token: prompt lookup's where it matches, else the MSD's from the base
        features before it (batched; a row leaves the micro batch when its budget is spent or the stop head ends its
        draft)."""
        model = self.model
        out = [_Drafts() for _ in rows]
        if self.draft_rows is not None and len(rows) > self.draft_rows:  # a full batch: one token per row
            return out
        budget = [self._budget(r) for r in rows]
        pending = torch.tensor([r.pending for r in rows], device=model.device)
        embeddings = model.embed(pending)
        ask = [b for b, r in enumerate(rows) if not self._look_up(r, out[b], len(rows))]  # the rows the MSD drafts for
        if not ask:
            return out
        at = torch.tensor(ask, device=model.device)
        live = self._still_drafting(hidden[at], embeddings[at], rows, out, budget, ask)
        if not live:
            return out
        index = torch.tensor(live, device=model.device)
        x = torch.cat([features[index], embeddings[index][:, None]], 1)
        start, msd_cache = 0, DynamicCache()
        while live:
            h = self.drafter.decoder(x, msd_cache, start)[:, -1]
            start += x.shape[1]
            masks = [None if rows[b].grammar is None else rows[b].grammar.mask(out[b].tokens) for b in live]
            tokens, dists = self._draw_drafts(h, [rows[b].cfg for b in live], [rows[b].generator for b in live], masks)
            for b, t, q in zip(live, tokens.tolist(), dists):
                out[b].tokens.append(t)
                if q is not None:  # the draft distribution, for the acceptance test
                    out[b].q.append(q)
            embeddings = model.embed(tokens)
            going = self._still_drafting(h, embeddings, rows, out, budget, live)
            if not going:
                break
            if len(going) < len(live):
                keep = torch.tensor([live.index(b) for b in going], device=model.device)
                msd_cache.batch_select_indices(keep)
                embeddings = embeddings[keep]
            x, live = embeddings[:, None], going
        return out

    def _draw_drafts(self, hidden: torch.Tensor, cfgs: list[DecodingConfig], generators: list,
                     masks: list[torch.Tensor | None] | None = None) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """Each row's next draft [N] from the MSD's states ``hidden`` [N, d], and for a sampled row the distribution
        [V] it was drawn from (the acceptance test's q). With a draft vocabulary only its rows of the LM head are
        multiplied, and a sampled row's distribution is warped and drawn over them alone, then placed in the full
        vocabulary (zero elsewhere): the same drafts as over the full head with every other logit at -inf, at a
        twelfth of the warping. ``masks``: the tokens [V] a row's JSON schema allows (None: all; ignored where it allows
        none the drafts could be)."""
        if self._draft_head is None:
            return draw_each(_masked(self.model.decode_logits(hidden).float(), masks), cfgs, generators)
        vocab, weight, bias = self._draft_head
        sub = hidden.to(weight.dtype) @ weight
        if bias is not None:
            sub = sub + bias
        sub_masks = masks and [None if m is None else m[vocab] for m in masks]
        picks, dists = draw_each(_masked(self.model.logits_of(sub).float(), sub_masks), cfgs, generators)
        size = self.model.vocab_size
        return vocab[picks], [None if q is None else q.new_zeros(size).index_copy_(0, vocab, q) for q in dists]

    def _still_drafting(self, hidden: torch.Tensor, embeddings: torch.Tensor, rows: list[_Row],
                        out: list[_Drafts], budget: list[int], live: list[int]) -> list[int]:
        """The rows in ``live`` that draft one more token (their stop head, in order, says go on; none after a draft
        that would end the row)."""
        ended = {b for b in live if out[b].tokens and self._ends(rows[b], out[b].tokens[-1])}
        if self.draft is not None:
            return [b for b in live if b not in ended and len(out[b].tokens) < min(self.draft, budget[b])]
        going_on = torch.sigmoid(-self.drafter.stop_head(hidden, embeddings).float()).tolist()
        keep = []
        for b, c in zip(live, going_on):
            out[b].p_continue.append(c)
            if b not in ended and len(out[b].tokens) < budget[b] and c >= rows[b].confidence:
                keep.append(b)
        return keep

    # ------------------------------------------------------------------ verifying
    def _verify(self, cache: SlotCache, rows: list[_Row], drafts: list[_Drafts], earlier: torch.Tensor):
        """One base forward over [pending, drafts...] for every row; keep the accepted prefix, roll back the
        rest; return the base's final state and the MSD's inputs at each row's last kept position (``earlier``: the
        MSD's inputs at the slot before the pending token, `decode_features`)."""
        model, device = self.model, self.model.device
        sizes = [1 + len(d.tokens) for d in drafts]
        folds = [self._fold_out(cache, b, r) for b, r in enumerate(rows)]
        lead = max(map(len, folds))  # columns before the pending tokens for the merged slots of folded groups
        width = max(sizes)
        ids = torch.zeros(len(rows), lead + width, dtype=torch.long)
        valid = torch.zeros(len(rows), lead + width, dtype=torch.bool)
        positions = torch.zeros(len(rows), lead + width, dtype=torch.long)
        for b, (r, d) in enumerate(zip(rows, drafts)):
            ids[b, lead:lead + sizes[b]] = torch.tensor([r.pending] + d.tokens)
            valid[b, lead:lead + sizes[b]] = True
            positions[b, lead:] = r.fed + torch.arange(width)
        embeds = model.embed(ids.to(device))
        merged_slots = merged_before = None
        if lead:
            at = [(b, j) for b, f in enumerate(folds) for j in range(len(f))]
            pieces = [rows[b].tokens[slice(*folds[b][j])] for b, j in at]
            tokens, group_sizes = group_tensors(pieces, model.config.max_steps, device)
            where = tuple(torch.tensor(x, device=device) for x in zip(*at))
            embeds = embeds.index_put(where, model.embedder(model.embed(tokens), group_sizes))
            for b, j in at:
                valid[b, j] = True
                positions[b, j] = len(rows[b].prompt_ids) + folds[b][j][1] - 1  # a merged slot sits at its last token
            merged_slots = torch.zeros_like(valid)
            merged_slots[:, :lead] = valid[:, :lead]
            merged_slots = merged_slots.to(device)
        if self.fold and model.config.reads_merge_history:  # (after_fold: a row that folded, at this forward too)
            by_fold = model.config.reads_fold_history and not self.fold.bits  # (a stored history is no fold)
            merged_before = torch.tensor([r.merged or (by_fold and r.folding is not None and r.folding.folds > 0
                                                       and not (r.cfg.greedy and model.fold_reader_sampled_only))
                                          for r in rows], device=device)
        mask = cache.extend(valid.to(device), positions)
        final, features = model.base_forward(embeds, positions.to(device), mask, cache.kv, merged_slots=merged_slots,
                                             merged_before=merged_before)
        final, features, valid = final[:, lead:], features[:, lead:], valid[:, lead:]
        kept = []
        for b, (r, d, (n_kept, token, row_logits)) in enumerate(zip(rows, drafts, self._accept(final, rows, drafts))):
            first = r.fed
            emitted = d.tokens[:n_kept] + [token]
            probs = row_logits[:n_kept + 1].softmax(-1).gather(1, torch.tensor(emitted, device=device)[:, None])
            p_continue = (d.p_continue[1:n_kept + 1] + [0.0] * (n_kept + 1))[:n_kept + 1]
            taken = len(r.tokens)
            self._emit(r, emitted, probs[:, 0].tolist(), p_continue)
            if r.traced:  # the base's logits of each token the row took
                for token_logits in row_logits[:len(r.tokens) - taken]:
                    self._trace(r, token_logits)
            r.drafts.append(len(d.tokens))
            r.accepted.append(n_kept)
            r.looked_up.append(d.looked_up)
            r.predicted.append(d.predicted)
            r.fed += 1 + n_kept
            # the slots to keep: the pending token and the kept drafts, but none after a token that ended the row (an
            # EOS id among the kept drafts): an ordinary decode never feeds a row's last token either
            kept.append(len(r.tokens) - taken - 1)
            if r.folding:  # the base's entropies of the tokens taken; the pending token and kept drafts are cached
                r.merged = r.merged or bool(folds[b])
                r.folding.chose(row_logits[:len(r.tokens) - taken], r.tokens[taken:])
                answer = first - len(r.prompt_ids)
                r.folding.fed(answer, answer + 1 + n_kept)
        self._roll_back(cache, sizes, kept)
        return model.decode_features(final, features, valid.to(device), torch.tensor(kept, device=device), earlier)

    def _accept(self, final: torch.Tensor, rows: list[_Row], drafts: list[_Drafts]):
        """Each row's (drafts kept, the base's next token, base logits [>= kept + 1, V] from its pending token on),
        from the base's final states ``final`` [B, S, d] at [pending, drafts...]. The LM head (a product with the
        whole vocabulary) runs on ``head_chunk`` positions of every undecided row at a time, so the positions after a
        rejected draft mostly cost nothing; the acceptance test is the same."""
        decided: dict[int, tuple[int, int]] = {}
        parts: list[list[torch.Tensor]] = [[] for _ in rows]
        seen = [0] * len(rows)
        while len(decided) < len(rows):
            spans = [(b, seen[b], min(seen[b] + self.head_chunk, 1 + len(drafts[b].tokens)))
                     for b in range(len(rows)) if b not in decided]
            hidden = torch.cat([final[b, s:e] for b, s, e in spans])
            # a few rows take the CPU's fast head layout (the cost of 1 row, not k+1)
            logits = self.model.decode_logits(hidden, max_rows=SMALL_HEAD_ROWS).float()
            for part, (b, s, e) in zip(logits.split([e - s for _, s, e in spans]), spans):
                parts[b].append(part)
                seen[b] = e
                tested = along(part, rows[b].adjusts, drafts[b].tokens, s)  # (the base's test reads them adjusted)
                outcome = speculative_accept(tested, drafts[b], rows[b].cfg, rows[b].generator, start=s)
                if outcome is not None:
                    decided[b] = outcome
        return [(*decided[b], torch.cat(parts[b])) for b in range(len(rows))]

    @staticmethod
    def _fold_out(cache: SlotCache, b: int, r: _Row) -> list[tuple[int, int]]:
        """The groups of row ``r`` (cache row ``b``) that fold at this forward, as answer token ranges; their one-token
        slots become holes (fed again as merged slots by the caller; none with keep ``last`` or ``first``: a group
        keeps that token's slot)."""
        if r.folding is None:
            return []
        groups = r.folding.due(r.fed - len(r.prompt_ids))
        if groups:
            gone = r.folding.fold(cache.valid[b], groups)
            if r.folding.folding.bits:  # (their keys and values are still there: holes until a compaction)
                cache.hold(b, gone)
        return groups if r.folding.folding.keep == "merged" else []  # (keep last or first: nothing to feed)

    @staticmethod
    def _roll_back(cache: SlotCache, sizes: list[int], kept: list[int]) -> None:
        """Mark each row's rejected slots invalid, crop the slots no row kept, compact when holes pile up."""
        width = max(sizes)
        for b, n in enumerate(kept):
            cache.reject_last(b, width - 1 - n)
        cache.drop_last(width - 1 - max(kept))
        cache.compact_if_holey()


def _masked(logits: torch.Tensor, masks: list[torch.Tensor | None] | None) -> torch.Tensor:
    """``logits`` [N, V] with each row's tokens outside its mask at -inf (rows whose mask is None or empty: as they
    are)."""
    if not masks or all(m is None for m in masks):
        return logits
    out = logits.clone()
    for b, m in enumerate(masks):
        if m is not None and bool(m.any()):
            out[b] = out[b].masked_fill(~m, -torch.inf)
    return out


def verify_generate(model: HamburgerModel, tokenizer, prompt_ids: list[int], config: DecodingConfig | None = None,
                    draft: int | None = None, draft_vocab: torch.Tensor | None = None) -> VerifyResult:
    """Lossless generation for one tokenized prompt (see `VerifyGeneration`)."""
    return VerifyGeneration(model, tokenizer, [prompt_ids], config or DecodingConfig(), draft=draft,
                            draft_vocab=draft_vocab).run()[0]


def draft_vocabulary(path: str, size: int) -> torch.Tensor:
    """The ``size`` most frequent response tokens of a training data file (jsonl rows with `response_ids`,
    e.g. the segmented or distilled data; gzip allowed), sorted: a draft vocabulary for `VerifyGeneration`."""
    from collections import Counter

    from hamburger.data.io import read_jsonl

    counts: Counter = Counter()
    for row in read_jsonl(path):
        counts.update(row["response_ids"])
    if not counts:
        raise HamburgerError(f"{path}: no response_ids to count")
    return torch.tensor(sorted(t for t, _ in counts.most_common(size)))


def on_base(model: HamburgerModel, base_model: HamburgerModel) -> HamburgerModel:
    """``model``'s grafted modules on ``base_model``'s base: what verify mode runs when the checkpoint's own base
    carries adapters (verification must use the unchanged base for the output to be the base's)."""
    if base_model is model:
        return model
    out = HamburgerModel(base_model.base, replace(model.config)).eval()
    out.load_grafted_state_dict(model.grafted_state_dict())
    out.draft_vocab, out.draft_ngrams, out.verify_drafter = model.draft_vocab, model.draft_ngrams, model.verify_drafter
    return out
