"""The generation engine: prefill, then macro steps (one base forward per token group) and micro steps.

`Generation` runs a batch of prompts (batch 1 is the common case) and yields one `GroupEvent` per
row and group as it is produced (streaming); `generate` runs one prompt to completion. Each macro
step feeds every unfinished row exactly one merged vector, so every row adds one KV slot per step
whatever its group length (a model with a ``single_tail`` feeds a group as a merged head and its last tokens alone,
up to single_tail + 1 slots, still in one forward, and with ``fold_tail`` d the group fed d steps before comes back as
one merged slot in that forward, its split slots leaving the cache); finished rows are dropped from the batch.

With `prefill_chunk` a prompt longer than that is prefilled a chunk per macro step, between the running
rows' steps, and joins the batch when its last chunk is in: one long prompt no longer stalls the others. Rows that
arrive with the same prompt (a request's several answers) share one reading of it, copied into each row's cache.
With a `PromptCache` (`engine/prompt_cache.py`) every prompt's reading is kept, and a prompt that begins with a kept
one's tokens reads from where that one can be cut (a chunked prefill that starts there).

A request's `reread` (`DecodingConfig`) re-reads doubted merged groups: after a macro step fed a row a merged
group, if the next token's top probability is below it, the merged slot becomes a hole in the cache and one more
forward writes the group's tokens as single slots (`_reread`); the row goes on from that reading.

`micro_loop` picks how a group is emitted (`engine/micro.py`): "host" decides each micro step on the host,
"device" keeps the micro loop on the device with one host transfer per macro step (and compiles it after
`micro.compile_micro_loop`). The text grows incrementally (`engine/detok.py`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator

import torch

from hamburger.core.model import HamburgerModel
from hamburger.core.packing import group_tensors, input_sizes
from hamburger.engine.bad_words import BadWords
from hamburger.engine.cache import SlotCache, rows_copy
from hamburger.engine.detok import Detokenizer
from hamburger.engine.micro import DeviceMicroLoop, HostMicroLoop
from hamburger.engine.grammar import Grammar, compile_config
from hamburger.engine.penalties import Penalties
from hamburger.engine.prompt import cut_at_stop, eos_ids, safe_prefix
from hamburger.engine.prompt_cache import PromptCache
from hamburger.errors import HamburgerError
from hamburger.engine.sampling import Adjust, DecodingConfig, knob_gates, top_alternatives


SCORE_CHUNK = 64  # prompt positions per LM-head call when a request asks for its prompt's log-probabilities


@dataclass
class GroupEvent:
    """One group of one row, as emitted (a streaming chunk)."""

    row: int
    token_ids: list[int]
    text: str  # new text that is safe to show (held back while it may still become a stop string)
    p_continue: list[float]  # 1 - p_stop after each token of the group
    token_probs: list[float]  # the model's probability of each chosen token
    finish_reason: str | None = None  # "eos", "length" or "stop" on the row's last event
    # each token's most likely tokens, (id, log-probability) (`DecodingConfig.top_logprobs`; empty without)
    alternatives: list[list[tuple[int, float]]] = field(default_factory=list)
    # on a row's first event, with `DecodingConfig.prompt_logprobs`: as `GenerationResult`'s (empty elsewhere)
    prompt_logprobs: list[float] = field(default_factory=list)
    prompt_alternatives: list[list[tuple[int, float]]] = field(default_factory=list)


@dataclass
class GenerationResult:
    text: str
    token_ids: list[int]
    groups: list[int]
    tokens: int
    forwards: int  # base-model forwards (the prefill counts: it yields the first group)
    tau: float  # tokens per base forward
    prompt_tokens: int
    kv_slots: int  # base KV entries held at the end: prompt + groups - 1 (the last group is never fed) + extra slots
    #                (a single tail's, re-reads')
    kv_slots_ordinary: int  # what a one-token-per-forward model holds: prompt + tokens - 1
    kv_bytes: int
    kv_bytes_ordinary: int
    prefill_s: float  # prompt forward + first group (time to first token)
    decode_s: float  # everything after the first group
    decode_tok_s: float  # tokens after the first group / decode_s
    finish_reason: str
    confidence: float
    # what ended it where it is not the model's end-of-sequence token (vLLM's): the stop string, or the stop token id
    stop_reason: str | int | None = None
    p_continue: list[float] = field(default_factory=list)
    token_probs: list[float] = field(default_factory=list)
    rereads: int = 0  # merged groups read again as single slots (`DecodingConfig.reread`), one forward each
    alternatives: list[list[tuple[int, float]]] = field(default_factory=list)  # as `GroupEvent.alternatives`
    # with `DecodingConfig.prompt_logprobs`: each prompt token's log-probability after those before it (the first
    # token's is not known: one fewer than the prompt's tokens), its most likely alternatives, and its rank (1: the
    # most likely; 1 + the tokens more likely than it)
    prompt_logprobs: list[float] = field(default_factory=list)
    prompt_alternatives: list[list[tuple[int, float]]] = field(default_factory=list)
    prompt_ranks: list[int] = field(default_factory=list)
    cached_tokens: int = 0  # prompt tokens its prefill did not read, taken from a `PromptCache`

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Fed:
    """A group a folding single tail fed and has not folded yet (`HamburgerConfig.fold_tail`)."""

    tokens: list[int]
    slots: int  # cache slots it holds: its inputs, or one per token after a re-read
    added: int  # slots its step added: those and the fold's
    position: int  # its last token's position (where its merged slot goes)


class _Row:
    """Per-request state."""

    def __init__(self, prompt_ids: list[int], cfg: DecodingConfig, default_confidence: float, tokenizer=None,
                 gate: str = "stop_head", prefilter: float = 0.0, eos=()):
        self.prompt_ids = prompt_ids
        self.detok = Detokenizer(tokenizer, cfg.skip_special_tokens)
        self.cfg = cfg
        self.ends = cfg.ends(eos)  # the ids that end it (`DecodingConfig.ends` of the model's end-of-sequence ids)
        self.own_ends = frozenset(() if cfg.ignore_eos else eos)  # those that are the model's: no `stop_reason`
        self.confidence = cfg.confidence if cfg.confidence is not None else default_confidence
        # the least -stop_logit for the group to go on; the least MSD probability of a micro token it takes
        self.threshold, self.floor = knob_gates(self.confidence, gate, prefilter)
        self.generator = cfg.make_generator()
        self.tokens: list[int] = []
        self.groups: list[int] = []
        self.p_continue: list[float] = []
        self.probs: list[float] = []
        self.alternatives: list[list[tuple[int, float]]] = []  # each token's `top_logprobs` most likely tokens
        self.traced = False  # the engine's `_trace` gets each of its tokens' logits
        self.penalties: Penalties | None = None  # what its text and bias do to its choices (`Generation.add`)
        self.grammar: Grammar | None = None  # the JSON schema its answer is held to
        self.bad_words: BadWords | None = None  # the words its answer may not hold
        self.prompt_logprobs: list[float] = []  # `DecodingConfig.prompt_logprobs`: filled by the prefill
        self.prompt_ranks: list[int] = []
        self.prompt_alternatives: list[list[tuple[int, float]]] = []
        self.cached = 0  # its prompt's first tokens, taken from a prompt cache
        self.cuts: dict[int, torch.Tensor] = {}  # the MSD's inputs where a prompt cache may cut its prompt
        self.group: list[int] = []
        self.merged = False  # a merged slot (a group of 2+ tokens) was fed: the cache holds one
        self.merged_earlier = False  # the same before the last macro step (a re-read group leaves the cache)
        self.rereads = 0  # merged groups read again as single slots
        # KV slots beyond one per group: a single tail's inputs (`input_sizes`), re-read groups' tokens
        self.extra_slots = 0
        self.last_inputs = 1  # slots the last fed group took
        self.recent: list[_Fed] = []  # a folding single tail's last fed groups, oldest first
        self.folded = False  # the last macro step folded an earlier group into one merged slot
        self.text = ""
        self.shown = 0  # characters of text already streamed
        self.reason: str | None = None
        self.stop_reason: str | int | None = None  # the stop string or stop token id that ended it
        self.stops_after: int | None = None  # the length of its first `min_tokens` tokens' text, once it is longer
        self.forwards = 1
        self.started = 0.0
        self.prefill_s: float | None = None
        self.kv_slots = 0
        self.kv_bytes = 0
        self.kv_bytes_ordinary = 0
        self.decode_s = 0.0

    @property
    def done(self) -> bool:
        return self.reason is not None

    @property
    def adjusts(self) -> list[Adjust]:
        """What its request does to the logits its tokens are chosen from: penalties, its bad words, then the schema's
        mask."""
        return [a for a in (self.penalties, self.bad_words, self.grammar) if a is not None]

    def take(self, token: int, prob: float, p_continue: float, context_length: int) -> None:
        """Record one emitted token; finish at an id that `ends` it, max_new_tokens or the context's end."""
        self.tokens.append(token)
        self.group.append(token)
        for adjust in self.adjusts:
            adjust.add(token)
        self.probs.append(prob)
        self.p_continue.append(p_continue)
        if token in self.ends:
            self.reason = "eos"
            self.stop_reason = None if token in self.own_ends else token
        elif len(self.tokens) >= self.cfg.max_new_tokens or len(self.prompt_ids) + len(self.tokens) >= context_length:
            self.reason = "length"


def checked_request(config: DecodingConfig, eos, vocab: int, tokenizer) -> BadWords | None:
    """The refusals of a request's settings that need the model (its ``vocab`` size and end-of-sequence ids ``eos``)
    and its tokenizer, but no engine: token ids outside the vocabulary, and `min_tokens`, `allowed_token_ids` and
    `bad_words` that leave no token to choose (what `DecodingConfig.validate` cannot tell alone). `Generation.add`
    makes them, and the server before a streamed answer's headers go. Returns the request's `BadWords` (None: none)."""
    for name in ("stop_token_ids", "allowed_token_ids"):
        if any(t >= vocab for t in getattr(config, name) or ()):
            raise HamburgerError(f"{name} names ids outside the vocabulary [0, {vocab})")
    allowed = None if config.allowed_token_ids is None else set(config.allowed_token_ids)
    if config.min_tokens and allowed is not None and allowed <= config.ends(eos):
        raise HamburgerError("min_tokens with allowed_token_ids that all end the answer leaves no token to choose")
    if not config.bad_words:
        return None
    bad_words = BadWords.of(config.bad_words, tokenizer, vocab)
    left = None if allowed is None else allowed - set(bad_words.always)
    if left is not None and not left:
        raise HamburgerError("bad_words ban every one of allowed_token_ids")
    if left is not None and config.min_tokens and left <= config.ends(eos):
        raise HamburgerError("min_tokens with the allowed_token_ids that bad_words leave, which all end the answer, "
                             "leaves no token to choose")
    return bad_words


class Generation:
    """Generates for a batch of tokenized prompts; iterate it for streaming, then read `results`."""

    def __init__(self, model: HamburgerModel, tokenizer, prompts: list[list[int]],
                 configs: DecodingConfig | list[DecodingConfig], trace_logits: bool = False,
                 static_cache: bool = False, prefill_chunk: int | None = None,
                 poll: Callable[[], None] | None = None, micro_loop: str = "host",
                 prompt_cache: PromptCache | None = None):
        if not prompts:
            raise HamburgerError("no prompts given")
        cfgs = configs if isinstance(configs, list) else [configs] * len(prompts)
        if len(cfgs) != len(prompts):
            raise HamburgerError("one DecodingConfig per prompt is needed")
        self.model, self.tokenizer = model, tokenizer
        eos = eos_ids(model, tokenizer)
        self.eos = set(eos)
        if micro_loop not in ("host", "device"):
            raise HamburgerError(f"micro_loop must be 'host' or 'device', got {micro_loop!r}")
        if micro_loop == "device" and model.config.micro_lookup > 0:
            raise HamburgerError("the model's micro_lookup needs micro_loop 'host' (the answer's lookup runs there)")
        self._micro = (DeviceMicroLoop if micro_loop == "device" else HostMicroLoop)(model, eos, self._trace)
        self.rows: list[_Row] = []
        self._pending: list[int] = []  # rows added but not prefilled yet
        self._kept: set[int] = set()  # rows not released
        self.peak_kv_bytes = 0  # largest measured size of the batch's KV cache
        self.results: list[GenerationResult] = []
        self.trace_logits = trace_logits  # keep every emitted token's logits in `logits[row]` (tests, analysis)
        # Preallocate the base's KV cache for the longest possible answer (fixed shapes for compiled decoding);
        # rows cannot join a running batch then.
        self.static_cache = static_cache
        if prefill_chunk is not None and (prefill_chunk < 1 or static_cache):
            raise HamburgerError("prefill_chunk must be >= 1, and needs the dynamic cache")
        self.prefill_chunk = prefill_chunk
        self._chunking: list[_Chunked] = []  # the long prompts being read
        # prompts read before (by this engine's model and kind of cache), kept across batches; rows read on from them
        if prompt_cache is not None:
            if static_cache:
                raise HamburgerError("a prompt cache needs the dynamic KV cache")
            prompt_cache.bind(self._engine_key())
        self.prompt_cache = prompt_cache
        # Called once per macro step after its events, and between prefill chunks: the place to `add` and `cancel`.
        self.poll = poll
        self.logits: list[list[torch.Tensor]] = []
        for p, c in zip(prompts, cfgs):
            self.add(p, c)

    def add(self, prompt_ids: list[int], config: DecodingConfig) -> int:
        """Add a request; returns its row index. Callable between events while iterating
        (continuous batching): the row is prefilled at the next macro step and joins the batch."""
        config.validate()
        if config.reread > 0 and self.static_cache:
            raise HamburgerError("reread needs the dynamic KV cache (it leaves holes in it)")
        if not prompt_ids:
            raise HamburgerError("the prompt is empty")
        if len(prompt_ids) >= self.model.context_length:
            raise HamburgerError(f"the prompt has {len(prompt_ids)} tokens; the model's context is "
                                 f"{self.model.context_length} tokens, leaving no room to generate")
        bad_words = checked_request(config, self.eos, self.model.vocab_size, self.tokenizer)
        row = _Row(list(prompt_ids), config, self.model.config.default_confidence, self.tokenizer,
                   self.model.config.gate, self.model.config.prefilter, self.eos)
        row.traced = self.trace_logits or config.top_logprobs > 0
        row.penalties = Penalties.of(config, prompt_ids, self.model.vocab_size, self.model.device, sorted(row.ends))
        row.bad_words = bad_words
        if config.json_schema is not None or config.grammar is not None:  # (refused before the row joins anything)
            if self.tokenizer is None:
                raise HamburgerError("a JSON schema or a grammar needs the model's tokenizer")
            row.grammar = Grammar(compile_config(config), self.tokenizer, self.model.vocab_size, sorted(self.eos),
                                  self.model.device)
        self.rows.append(row)
        self.logits.append([])
        self._pending.append(len(self.rows) - 1)
        self._kept.add(len(self.rows) - 1)
        return len(self.rows) - 1

    def _engine_key(self) -> tuple:
        """What a prompt cache's caches are alike for (`PromptCache.bind`): the model and the engine's kind."""
        return id(self.model), type(self).__name__

    @property
    def active_rows(self) -> int:
        """Rows admitted and not finished (pending ones included)."""
        return sum(not self.rows[i].done for i in self._kept)

    def _trace(self, row: _Row, logits: torch.Tensor) -> None:
        """One emitted token's logits [V] (those it was chosen from), for a row that keeps them (`_Row.traced`): all
        of them with ``trace_logits``, its most likely tokens with `DecodingConfig.top_logprobs`."""
        if self.trace_logits:
            self.logits[self.rows.index(row)].append(logits.clone())
        if row.cfg.top_logprobs:
            row.alternatives.append(top_alternatives(logits, row.cfg.top_logprobs))

    def release(self, row: int) -> None:
        """Free a finished (or cancelled) row's per-token state once its result has been read: a batch that
        long-running serving keeps open holds no history. Its later `result` is empty."""
        r = self.rows[row]
        if r.done and row in self._kept:
            self._kept.discard(row)
            r.prompt_ids, r.tokens, r.groups, r.p_continue, r.probs, r.group, r.text = [], [], [], [], [], [], ""
            r.alternatives, r.prompt_logprobs, r.prompt_alternatives, r.prompt_ranks = [], [], [], []
            r.generator, r.detok, r.penalties, r.grammar, r.bad_words = None, None, None, None, None
            self.logits[row] = []

    def result(self, row: int) -> GenerationResult:
        """The result of one row; final once the row's last event (with a finish_reason) is out."""
        return self._result(self.rows[row])

    # ------------------------------------------------------------------ driver
    def __iter__(self) -> Iterator[GroupEvent]:
        model = self.model
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                yield from self._run()
        finally:
            model.train(was_training)
        self.results = [self._result(r) for r in self.rows]

    def run(self) -> list[GenerationResult]:
        for _ in self:
            pass
        return self.results

    def cancel(self, row: int) -> None:
        """Stop generating for `row` (e.g. its client went away): it is marked finished with
        finish_reason "cancelled" and dropped from the batch at the next macro step, so the other rows
        go on unchanged. Call it between events, from the thread that iterates; a row cancelled before
        its first group still emits that group. Its result keeps what it produced (kv_bytes 0)."""
        if not self.rows[row].done:
            self.rows[row].reason = "cancelled"

    def _run(self) -> Iterator[GroupEvent]:
        model, rows = self.model, self.rows
        cache, hidden, features, active = None, None, None, []  # cache row i holds request active[i]
        while True:
            for new, *joining in self._prefill_step():  # rows that join the batch
                cache, hidden, features = join_batch((cache, hidden, features), joining)
                active += new
            if not active:
                if not (self._pending or self._chunking):
                    return
                if self.poll:  # a long prompt is still being prefilled: let the caller act between chunks
                    self.poll()
                continue
            clock = time.perf_counter()
            groups = self._micro(hidden, features, [rows[i] for i in active])  # on the device, or None
            events = [self._close_group(rows[i], i) for i in active]
            now = time.perf_counter()
            for i in active:
                if rows[i].prefill_s is None:  # the prefill ends when the first group is out (TTFT)
                    rows[i].prefill_s = now - rows[i].started
                else:
                    rows[i].decode_s += now - clock
            self._measure_kv(cache, active, [pos for pos, i in enumerate(active) if rows[i].done])
            yield from events
            if self.poll:
                self.poll()
            keep = [pos for pos, i in enumerate(active) if not rows[i].done]
            if not keep:
                cache, hidden, features, active = None, None, None, []
                continue
            clock = time.perf_counter()
            if len(keep) < len(active):
                index = torch.tensor(keep, device=model.device)
                cache.select_rows(index)
                features = features[index]
                active = [active[pos] for pos in keep]
                groups = None if groups is None else (groups[0][index], groups[1][index])
            earlier = features  # the MSD's inputs at the slot before the new group (its context goes on from there)
            hidden, features = self._macro_step(cache, [rows[i] for i in active], groups, earlier)
            for i in active:
                rows[i].forwards += 1
                rows[i].decode_s += time.perf_counter() - clock
            doubted = self._doubted(hidden, [rows[i] for i in active])
            if doubted:
                clock = time.perf_counter()
                hidden, features = self._reread(cache, [rows[i] for i in active], doubted, hidden, features,
                                                earlier)
                for pos in doubted:
                    rows[active[pos]].decode_s += time.perf_counter() - clock

    # ------------------------------------------------------------------ base forwards
    def _prefill_step(self) -> list[tuple]:
        """Prefill what is due this step: every new prompt up to `prefill_chunk` tokens (together), and one
        chunk of the longer prompt with the fewest tokens left (a shorter one that arrives later goes first); a prompt
        that begins with one the prompt cache keeps is read on from there, as a long one, and at once where a chunk
        holds the rest (a forward of its own). Returns (rows, cache, hidden, features) for the rows now complete."""
        new, self._pending = [i for i in self._pending if i in self._kept], []  # (a released row is gone)
        chunk = self.prefill_chunk
        started = time.perf_counter()
        short = []
        for i in new:
            row = self.rows[i]
            row.started = started
            same = self._equal_unread(row)
            hit = self._cached(row) if same is None else None
            if same is not None:
                same.rows.append(i)
                row.cached = same.start
            elif hit is not None:
                self._chunking.append(_Chunked([i], cache=hit.cache, done=hit.length, earlier=hit.inputs,
                                               start=hit.length, cuts=hit.cuts))
                row.cached = hit.length
            elif chunk is None or len(row.prompt_ids) <= chunk:
                short.append(i)
            else:
                self._chunking.append(_Chunked([i]))
        ready = [(short, *self._prefill([self.rows[i] for i in short]))] if short else []
        for c in self._chunking:  # rows cancelled while waiting
            c.rows = [i for i in c.rows if not self.rows[i].done]
        self._chunking = [c for c in self._chunking if c.rows]
        left = lambda c: len(self.rows[c.rows[0]].prompt_ids) - c.done  # noqa: E731
        # every prompt begun from the prompt cache with at most a chunk left is read now, as new short ones are
        for entry in [c for c in self._chunking if c.start and (chunk is None or left(c) <= chunk)]:
            ready += self._read_chunk(entry)
        if self._chunking:
            ready += self._read_chunk(min(self._chunking, key=left))
        return ready

    def _read_chunk(self, entry: "_Chunked") -> list[tuple]:
        """Read the next chunk of ``entry``'s prompt: [(rows, cache, hidden, features)] if it was the last, else []."""
        rows = [self.rows[i] for i in entry.rows]
        total = len(rows[0].prompt_ids)
        end = total if self.prefill_chunk is None else min(entry.done + self.prefill_chunk, total)
        cache, hidden, features = self._prefill_chunk(rows, entry, end)
        if end < total:
            return []
        self._chunking.remove(entry)
        self._keep(rows[0].prompt_ids, cache, entry.cuts)
        for row in rows:
            row.cuts = entry.cuts
        return [(entry.rows, *copied(cache, hidden, features, [0] * len(rows)))]

    def _equal_unread(self, row: _Row) -> "_Chunked | None":
        """A prompt being read in chunks that equals ``row``'s and has not been begun: ``row`` is read with it (not
        one a prompt cache began, if ``row`` asks for its whole prompt's log-probabilities)."""
        whole = row.cfg.prompt_logprobs is not None
        return next((c for c in self._chunking if c.done == c.start and not (whole and c.start)
                     and self.rows[c.rows[0]].prompt_ids == row.prompt_ids), None)

    def _cached(self, row: _Row):
        """The prompt cache's `Hit` for ``row``'s prompt (None: no cache, no kept prompt it begins with, or the row
        asks for every prompt token's log-probability, which needs them all read)."""
        if self.prompt_cache is None or row.cfg.prompt_logprobs is not None:
            return None
        return self.prompt_cache.find(row.prompt_ids)

    def _keep(self, prompt_ids: list[int], cache: SlotCache, cuts: dict[int, torch.Tensor], row: int = 0) -> None:
        """Give the prompt cache, if any, a copy of row ``row`` of ``cache``, which read ``prompt_ids`` to its end."""
        if self.prompt_cache is not None:
            part = rows_copy(cache, [row])
            if part.num_slots > len(prompt_ids):  # (a batch's left padding, rejected drafts' holes)
                part.compact()
            self.prompt_cache.add(prompt_ids, part, cuts)

    def _cut_inputs(self, final: torch.Tensor, features: torch.Tensor, start: int, total: int,
                    previous: torch.Tensor | None = None) -> dict[int, torch.Tensor]:
        """The micro-step decoder's inputs at the prompt lengths the prompt cache may cut a prompt of ``total`` tokens
        at (`PromptCache.cuts`) among those one forward read, from token ``start`` on: ``final`` [1, S, d] and
        ``features`` [1, S, m, d], after ``previous`` (`decode_features`); {} without a prompt cache."""
        if self.prompt_cache is None:
            return {}
        out = {}
        for cut in self.prompt_cache.cuts(start, start + final.shape[1], total):
            last = torch.tensor([cut - start - 1], device=final.device)
            out[cut] = self.model.decode_features(final, features, last=last, previous=previous)[1][0].clone()
        return out

    def _new_cache(self, batch_size: int, capacity: int | None = None) -> SlotCache:
        """An empty cache for ``batch_size`` rows (static with ``capacity`` slots)."""
        cache = SlotCache(self.model.base.config, batch_size, self.model.device, capacity)
        # a re-read group's tokens, or a group a folding tail feeds again, sit up to fold_tail (at least one) groups
        # before the step that fed it
        cache.reach = self.model.config.max_steps * max(1, self.model.config.fold_tail)
        return cache

    def _prefill_chunk(self, rows: list[_Row], entry: "_Chunked", end: int):
        """Feed prompt tokens [``entry.done``, ``end``) of the prompt of ``rows`` (one prompt, read once for them all)
        into the entry's cache of one row (made on the first chunk); returns (cache, hidden, features) after them."""
        model, start = self.model, entry.done
        ids = torch.tensor([rows[0].prompt_ids[start:end]], device=model.device)
        positions = torch.arange(start, start + ids.shape[1], device=model.device)[None]
        cache = entry.cache or self._new_cache(1)
        mask = cache.extend(torch.ones_like(ids, dtype=torch.bool), positions)
        final, features = model.base_forward(model.embed(ids), positions, mask, cache.kv)
        for row in rows:
            self._score_prompt(row, final[0], start)
        entry.cuts.update(self._cut_inputs(final, features, start, len(rows[0].prompt_ids), entry.earlier))
        hidden, features = model.decode_features(final, features, previous=entry.earlier)
        entry.cache, entry.done, entry.earlier = cache, end, features
        return cache, hidden, features

    def _score_prompt(self, row: _Row, final: torch.Tensor, start: int) -> None:
        """For a row that asks (`DecodingConfig.prompt_logprobs`), the log-probability of each prompt token that the
        base's final states ``final`` [n, d] at positions start.. predict, and its most likely alternatives; the LM
        head runs on `SCORE_CHUNK` positions at a time (a 49k-token vocabulary makes 200 KB of logits per position)."""
        k = row.cfg.prompt_logprobs
        if k is None:
            return
        targets = row.prompt_ids[start + 1:start + 1 + final.shape[0]]
        for at in range(0, len(targets), SCORE_CHUNK):
            part = targets[at:at + SCORE_CHUNK]
            logprobs = torch.log_softmax(self.model.decode_logits(final[at:at + len(part)]).float(), -1)
            chosen = logprobs.gather(1, torch.tensor(part, device=logprobs.device)[:, None])[:, 0]
            row.prompt_logprobs += chosen.tolist()
            row.prompt_ranks += ((logprobs > chosen[:, None]).sum(1) + 1).tolist()
            values, ids = logprobs.topk(k)
            row.prompt_alternatives += [list(zip(i, v)) for i, v in zip(ids.tolist(), values.tolist())]

    def _prefill(self, rows: list[_Row]):
        """Read the prompts of ``rows`` in one forward, each distinct prompt once (rows with the same prompt, such as a
        request's several answers, get copies of its reading); returns (cache, hidden, features) with a row each."""
        model = self.model
        distinct: dict[tuple[int, ...], int] = {}
        index = [distinct.setdefault(tuple(r.prompt_ids), len(distinct)) for r in rows]
        lengths = [len(p) for p in distinct]
        width = max(lengths)
        ids = torch.zeros(len(distinct), width, dtype=torch.long)
        valid = torch.zeros(len(distinct), width, dtype=torch.bool)
        for b, prompt in enumerate(distinct):  # left padding: every row's last slot is its last prompt token
            ids[b, width - lengths[b]:] = torch.tensor(prompt)
            valid[b, width - lengths[b]:] = True
        positions = (torch.arange(width)[None] - (width - torch.tensor(lengths))[:, None]).clamp(min=0)
        capacity = None
        if self.static_cache:  # a row holds at most prompt + max_new_tokens - 1 slots, and a single tail's holes
            longest = max(r.cfg.max_new_tokens for r in rows)
            per_step = model.config.single_tail + 1 + bool(model.config.fold_tail)  # (a fold's new slot; holes stay)
            capacity = width + per_step * longest if model.config.single_tail else \
                min(model.context_length, width + longest)
        cache = self._new_cache(len(distinct), capacity)
        mask = cache.extend(valid.to(model.device), positions)
        final, features = model.base_forward(model.embed(ids.to(model.device)), positions.to(model.device),
                                             mask, cache.kv)
        cuts = [self._cut_inputs(final[b:b + 1, width - n:], features[b:b + 1, width - n:], 0, n)
                for b, n in enumerate(lengths)]
        for b, r in zip(index, rows):
            self._score_prompt(r, final[b, width - lengths[b]:], 0)
            r.cuts = cuts[b]
        for b, prompt in enumerate(distinct):
            self._keep(list(prompt), cache, cuts[b], b)
        hidden, features = model.decode_features(final, features, valid.to(model.device))
        return (cache, hidden, features) if len(distinct) == len(rows) else copied(cache, hidden, features, index)

    def _macro_step(self, cache: SlotCache, rows: list[_Row], groups: tuple | None = None,
                    earlier: torch.Tensor | None = None):
        """Feed each row's last group to the base, one forward for all rows: one merged vector per group, or with the
        model's ``single_tail`` the group's inputs (`packing.input_sizes`: a merged head, then its last tokens alone),
        right-aligned, so every row's last slot is its group's last input (a row with fewer inputs has holes before
        them). ``groups``: the groups as (tokens, sizes) on the device already (the device micro loop), else made
        from the rows. ``earlier``: the MSD's inputs at each row's slot before the group (`decode_features`)."""
        model, device = self.model, self.model.device
        tail = model.config.single_tail
        if tail == 0:  # one input per row, made on the device when it is there
            width = max(len(r.group) for r in rows)
            tokens, sizes = (groups[0][:, :width], groups[1]) if groups is not None else \
                group_tensors([r.group for r in rows], width, device)
            inputs = model.embedder(model.embed(tokens), sizes)[:, None]
            positions = torch.tensor([[len(r.prompt_ids) + len(r.tokens) - 1] for r in rows], device=device)
            valid = torch.ones(len(rows), 1, dtype=torch.bool, device=device)
            merged_slots = (sizes > 1)[:, None]
            for r in rows:
                r.last_inputs = 1
        else:
            feeds = [self._tail_inputs(cache, b, r, tail) for b, r in enumerate(rows)]
            q = max(map(len, feeds))
            pieces, at, place = [], ([], []), torch.zeros(len(rows), q, dtype=torch.long)
            for b, feed in enumerate(feeds):
                for i, (piece, position) in enumerate(feed):
                    col = q - len(feed) + i
                    pieces.append(piece)
                    at[0].append(b)
                    at[1].append(col)
                    place[b, col] = position
            tokens, sizes = group_tensors(pieces, max(map(len, pieces)), device)
            where = tuple(torch.tensor(x, device=device) for x in at)
            embeds = model.embedder(model.embed(tokens), sizes)
            inputs = embeds.new_zeros(len(rows), q, embeds.shape[-1]).index_put(where, embeds)
            positions = place.to(device)
            valid = torch.zeros(len(rows), q, dtype=torch.bool, device=device).index_put(
                where, torch.ones_like(sizes, dtype=torch.bool))
            merged_slots = torch.zeros_like(valid).index_put(where, sizes > 1)
        mask = cache.extend(valid, positions)
        merged_before = None
        if model.config.reads_merge_history:  # (a host list, so no sync: the rows know their groups)
            merged_before = torch.tensor([r.merged for r in rows], device=device)
        final, features = model.base_forward(inputs, positions, mask, cache.kv, merged_slots=merged_slots,
                                             merged_before=merged_before)
        for r in rows:
            r.merged_earlier = r.merged
            r.merged = r.merged or len(r.group) > tail + 1 or r.folded
            r.extra_slots += r.last_inputs - 1
            if model.config.fold_tail:
                r.recent.append(_Fed(list(r.group), r.last_inputs, r.last_inputs + r.folded,
                                     len(r.prompt_ids) + len(r.tokens) - 1))
        if tail:
            cache.compact_if_holey()
        return model.decode_features(final, features, valid, previous=earlier)

    def _tail_inputs(self, cache: SlotCache, b: int, r: _Row, tail: int) -> list[tuple[list[int], int]]:
        """Row ``r``'s inputs of a macro step in a single-tail layout, as (tokens, position of the last one): the
        group's merged head and its single tail (`packing.input_sizes`). With ``fold_tail`` d, the group fed d steps
        before, if it took 2+ slots, is first taken out of the cache (its slots become holes) and fed again as one
        merged slot."""
        first = len(r.prompt_ids) + len(r.tokens) - len(r.group)  # the group's first position
        inputs = []
        r.folded = False
        if self.model.config.fold_tail and len(r.recent) == self.model.config.fold_tail:
            old = r.recent.pop(0)
            if old.slots > 1:  # its slots are the row's valid ones before what the later steps added (in order)
                later = sum(step.added for step in r.recent)
                from_end = cache.valid[b].flip(0).cumsum(0).flip(0)  # (no host sync: valid rank counted from the end)
                cache.valid[b] &= ~((from_end > later) & (from_end <= later + old.slots))
                inputs.append((old.tokens, old.position))
                r.extra_slots -= old.slots - 1
                r.folded = True
        start = 0
        for size in input_sizes(len(r.group), tail):
            start += size
            inputs.append((r.group[start - size:start], first + start - 1))  # an input sits at its last token
        r.last_inputs = len(inputs) - r.folded
        return inputs

    def _doubted(self, hidden: torch.Tensor, rows: list[_Row]) -> list[int]:
        """Batch positions of the rows just fed a merged group whose next token the model doubts: its top
        probability is below the row's `reread` (one LM head over those rows; a host sync only when some ask)."""
        tail = self.model.config.single_tail
        asking = [pos for pos, r in enumerate(rows) if r.cfg.reread > 0 and len(r.group) > tail + 1]
        if not asking:
            return []
        logits = self.model.decode_logits(hidden[asking])
        top = logits.float().softmax(-1).amax(-1).tolist()
        return [pos for pos, p in zip(asking, top) if rows[pos].cfg.reread >= 1.0 or p < rows[pos].cfg.reread]

    def _reread(self, cache: SlotCache, rows: list[_Row], doubted: list[int], hidden: torch.Tensor,
                features: torch.Tensor, earlier: torch.Tensor):
        """Read the last group of the rows at ``doubted`` again, one slot per token: its inputs (the cache's last
        slots, merged and any single tail) become holes, and one base forward over the batch writes the groups' tokens at their own
        positions (the other rows' new slots are holes). Returns hidden and features with those rows' replaced by
        the reading's last token (``earlier``: the MSD's inputs before the group, as `_macro_step` had them). Holes
        are squeezed out once they are a quarter of the cache."""
        model, device = self.model, self.model.device
        width = max(len(rows[pos].group) for pos in doubted)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        valid = torch.zeros(len(rows), width, dtype=torch.bool)
        positions = torch.zeros(len(rows), width, dtype=torch.long)
        for pos in doubted:
            r, k = rows[pos], len(rows[pos].group)
            ids[pos, :k] = torch.tensor(r.group)
            valid[pos, :k] = True
            first = len(r.prompt_ids) + len(r.tokens) - k  # the group's first token's own position
            positions[pos, :k] = torch.arange(first, first + k)
            r.merged = r.merged_earlier or r.folded  # the group's merged slot leaves the cache (a folded one stays)
            r.forwards += 1
            r.rereads += 1
            r.extra_slots += k - r.last_inputs
            if r.recent:  # a folding tail: this step's group now holds k slots
                r.recent[-1].slots, r.recent[-1].added = k, k + r.folded
            cache.valid[pos, cache.filled - r.last_inputs:] = False
        mask = cache.extend(valid.to(device), positions)
        merged_before = None
        if model.config.reads_merge_history:
            merged_before = torch.tensor([r.merged for r in rows], device=device)
        final, feats = model.base_forward(model.embed(ids.to(device)), positions.to(device), mask, cache.kv,
                                          merged_before=merged_before)
        index = torch.tensor(doubted, device=device)
        last = torch.tensor([len(rows[pos].group) - 1 for pos in doubted], device=device)
        hidden, features = hidden.clone(), features.clone()
        hidden[index], features[index] = model.decode_features(final[index], feats[index], valid.to(device)[index], last,
                                                               earlier[index])
        cache.compact_if_holey()
        return hidden, features

    def _close_group(self, row: _Row, index: int) -> GroupEvent:
        row.groups.append(len(row.group))
        # (the text of the id that ended it is left out, as vLLM leaves it out, unless `include_stop_str_in_output`)
        ended_by_id = row.reason == "eos" and not row.cfg.include_stop_str_in_output
        full = row.detok.update(row.tokens[:-1] if ended_by_id else row.tokens)
        text, stop = full, None
        if row.cfg.stop and len(row.tokens) > row.cfg.min_tokens:  # (as vLLM's: none ends the first min_tokens)
            if row.stops_after is None:
                row.stops_after = len(self.tokenizer.decode(row.tokens[:row.cfg.min_tokens],
                                                            skip_special_tokens=row.cfg.skip_special_tokens))
            # a stop string counts where it ends past them, and past the text an earlier group checked
            text, stop = cut_at_stop(full, row.cfg.stop, max(row.detok.kept, row.stops_after),
                                     row.cfg.include_stop_str_in_output)
        if stop is not None:
            row.reason, row.stop_reason = "stop", stop
        row.text = text
        shown_to = len(text) if row.done else safe_prefix(text, row.cfg.stop)
        delta = text[row.shown:shown_to] if shown_to > row.shown else ""
        row.shown = max(row.shown, shown_to)
        n, first = len(row.group), len(row.groups) == 1
        return GroupEvent(index, list(row.group), delta, row.p_continue[-n:], row.probs[-n:], row.reason,
                          row.alternatives[-n:] if row.cfg.top_logprobs else [],
                          row.prompt_logprobs if first else [], row.prompt_alternatives if first else [])

    def _measure_kv(self, cache: SlotCache, active: list[int], finished: list[int]) -> None:
        """The batch's KV bytes (for the peak), and what the rows at ``finished`` (positions in ``active``, the
        cache's rows) hold at their end, with what a decode of one slot per token would hold."""
        self.peak_kv_bytes = max(self.peak_kv_bytes, cache.kv_bytes())
        if finished:  # (reading the slots is a host sync)
            slots, held = cache.kv_slots(), cache.row_bytes()
            for pos in finished:
                row = self.rows[active[pos]]
                row.kv_slots, row.kv_bytes = slots[pos], held[pos]
                row.kv_bytes_ordinary = cache.ordinary_bytes(len(row.prompt_ids) + len(row.tokens) - 1)

    def _result(self, row: _Row) -> GenerationResult:
        n, groups = len(row.tokens), len(row.groups)
        ordinary_slots = len(row.prompt_ids) + n - 1
        return GenerationResult(
            text=row.text, token_ids=row.tokens, groups=row.groups, tokens=n, forwards=row.forwards,
            tau=n / row.forwards, prompt_tokens=len(row.prompt_ids),
            kv_slots=len(row.prompt_ids) + groups - 1 + row.extra_slots,
            kv_slots_ordinary=ordinary_slots, kv_bytes=row.kv_bytes, kv_bytes_ordinary=row.kv_bytes_ordinary,
            prefill_s=row.prefill_s or 0.0, decode_s=row.decode_s,
            decode_tok_s=(n - row.groups[0]) / row.decode_s if row.decode_s > 0 and row.groups and n > row.groups[0]
            else 0.0,
            finish_reason=row.reason or "length", confidence=row.confidence, stop_reason=row.stop_reason,
            p_continue=row.p_continue, token_probs=row.probs, rereads=row.rereads, alternatives=row.alternatives,
            prompt_logprobs=row.prompt_logprobs, prompt_alternatives=row.prompt_alternatives,
            prompt_ranks=row.prompt_ranks, cached_tokens=row.cached)


@dataclass
class _Chunked:
    """A long prompt read a chunk per macro step (`Generation.prefill_chunk`), once for the ``rows`` that share it."""

    rows: list[int]
    cache: SlotCache | None = None
    done: int = 0  # its tokens read
    earlier: torch.Tensor | None = None  # the MSD's inputs at the last chunk's last slot
    start: int = 0  # the tokens a prompt cache gave it (`Hit.length`)
    cuts: dict[int, torch.Tensor] = field(default_factory=dict)  # the MSD's inputs where a prompt cache may cut it


def copied(cache: SlotCache, hidden: torch.Tensor, features: torch.Tensor, index: list[int]) -> tuple:
    """(cache, hidden, features) of a prefill with row ``index[b]`` of each copied into row b."""
    at = torch.tensor(index, device=hidden.device)
    cache.select_rows(at)
    return cache, hidden[at], features[at]


def join_batch(running: tuple, joining: tuple) -> tuple:
    """(cache, hidden, features) of the running batch with the rows of a newly prefilled one appended
    (the running batch may be empty: all None)."""
    cache, hidden, features = running
    new_cache, new_hidden, new_features = joining
    if cache is None:
        return joining
    cache.merge(new_cache)
    return cache, torch.cat([hidden, new_hidden]), torch.cat([features, new_features])


def generate(model: HamburgerModel, tokenizer, prompt_ids: list[int], config: DecodingConfig | None = None
             ) -> GenerationResult:
    """Generate for one tokenized prompt."""
    return Generation(model, tokenizer, [prompt_ids], config or DecodingConfig()).run()[0]
