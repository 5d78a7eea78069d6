"""A scheduler thread that owns the model and batches concurrent requests (used by `hamburger serve`).

Requests wait in a bounded queue. The thread takes up to `max_batch_size` of them and runs them as
one batched `Generation`; each `GroupEvent` goes to its request's asyncio queue through
`loop.call_soon_threadsafe`, and a row's result as soon as its last group is out (not when the batch
ends). Continuous batching: whenever a row of the running batch finishes, waiting requests are
admitted into it (`Generation.add`) up to `max_batch_size` rows, prefilled at the next macro step.
A cancelled request (its client went away) is dropped from the running batch at the next macro step
with `Generation.cancel`, or skipped if it has not started. Both happen in `Generation`'s `poll` hook,
once per macro step and between the chunks of a long prompt's prefill (`prefill_chunk`), so a short
request joins while a long prompt is still being read.

Each request names its mode: "hamburger" (merged groups), "verify" (lossless verify mode, run on ``verify_model``)
or "verify_fold" (verify mode folding older tokens into merged slots, `folding.Folding`, on the checkpoint itself or
its fold reader, ``fold_model``).
Both verify modes also draft by prompt lookup when the scheduler has a ``lookup``. A batch runs one engine, so it
takes requests of one mode; a waiting request of another mode stops admission into the running batch, which then
drains, and the next batch starts with it.

With ``prompt_cache_bytes`` each mode's engine keeps the KV cache of the prompts it read, up to that many bytes, across
batches (`engine/prompt_cache.py`): a chat's next turn, or a prompt that begins like an earlier one, reads only what is
new.

`drain(timeout)` is the graceful stop: waiting requests get `ShuttingDown` at once and new ones are
refused; the running rows go on until they finish or the time is up, then each is cut and answered with
what it has (finish_reason "cancelled"). `idle` tells when nothing runs any more.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial

from hamburger.engine.folding import DEFAULT_FOLD, Folding, parse_folding
from hamburger.engine.generate import Generation
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import NgramDrafts
from hamburger.engine.prompt_cache import PromptCache
from hamburger.engine.verify import VerifyGeneration
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from hamburger.serve.metrics import Metrics


class QueueFull(Exception):
    """More requests are waiting than the queue holds."""


class ShuttingDown(Exception):
    """The scheduler is stopping and takes no more requests."""


class Refused(Exception):
    """The engine refused a request's settings (`Generation.add` raised `HamburgerError`): the client's mistake."""


@dataclass(eq=False)
class Request:
    """One generation request; its queue receives ("event", GroupEvent)..., then ("done", result) or
    ("error", exception)."""

    prompt_ids: list[int]
    config: DecodingConfig
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    cancelled: bool = False
    mode: str = "hamburger"  # "verify" / "verify_fold": verify mode (`verify.VerifyGeneration`), lossless / folding
    arrived: float = field(default_factory=time.monotonic)
    started: float | None = None  # when it got a row (`time.monotonic`)

    def push(self, kind: str, value) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, value))
        except RuntimeError:  # the event loop is closed: nobody listens any more
            pass


class Scheduler:
    def __init__(self, model, tokenizer, max_batch_size: int = 8, max_queue: int = 64,
                 prefill_chunk: int | None = None, verify_model=None, fold: Folding | None = None,
                 lookup: PromptLookup | None = None, draft_rows: int | None = None, ngrams: NgramDrafts | None = None,
                 fold_model=None, prompt_cache_bytes: int = 0):
        """``verify_model``: what verify-mode requests run, the grafted modules on the unchanged base
        (`verify.on_base`); default ``model`` (right when its base was not adapted). ``fold``: the folding of
        "verify_fold" requests (default `folding.DEFAULT_FOLD`), which run ``fold_model`` (default ``model``; a
        checkpoint's fold reader, `loading.fold_model`). ``lookup``: both verify modes also draft by prompt
        lookup. ``draft_rows``: both verify modes draft only in forwards of at most that many rows
        (`VerifyGeneration`). ``ngrams``: both verify modes also draft from this n-gram table (`engine/ngrams.py`).
        ``prompt_cache_bytes``: the most bytes of prompts' KV caches each mode keeps (0: none; see the module's doc)."""
        if max_batch_size < 1 or max_queue < 1:
            raise ValueError("max_batch_size and max_queue must be >= 1")
        self.model, self.tokenizer, self.prefill_chunk = model, tokenizer, prefill_chunk
        self.verify_model = verify_model if verify_model is not None else model
        self.fold_model = fold_model if fold_model is not None else model
        self.fold = (fold or parse_folding(DEFAULT_FOLD)).validate(model.config.max_steps)
        self.lookup = lookup.validate() if lookup is not None else None
        if draft_rows is not None and draft_rows < 0:
            raise ValueError("draft_rows must be >= 0")
        self.draft_rows, self.ngrams = draft_rows, ngrams
        if prompt_cache_bytes < 0:
            raise ValueError("prompt_cache_bytes must be >= 0")
        self.prompt_cache_bytes = prompt_cache_bytes
        self.prompt_caches: dict[str, PromptCache] = {}  # one per mode: each engine keeps its own kind of cache
        self.max_batch_size, self.max_queue = max_batch_size, max_queue
        self._waiting: deque[Request] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._drain_deadline: float | None = None  # time.monotonic() when running rows are cut
        self._thread = threading.Thread(target=self._loop, name="hamburger-scheduler", daemon=True)
        self.running = 0  # rows of the current batch (answered rows count until the batch ends)
        self.batches = 0  # batches run so far
        self.cancelled = 0  # requests dropped because their client went away
        self.metrics = Metrics()  # the answers given (`GET /metrics`)

    def start(self) -> "Scheduler":
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        with self._cond:
            self._stopping = True
            waiting, self._waiting = list(self._waiting), deque()
            self._cond.notify_all()
        for req in waiting:
            req.push("error", ShuttingDown("the server is shutting down"))
        self._thread.join(timeout)

    def drain(self, timeout: float) -> None:
        """Take no more requests; running rows are cut after `timeout` seconds (see the module doc)."""
        with self._cond:
            self._drain_deadline = time.monotonic() + max(timeout, 0.0)
            waiting, self._waiting = list(self._waiting), deque()
        for req in waiting:
            req.push("error", ShuttingDown("the server is shutting down"))

    @property
    def draining(self) -> bool:
        return self._drain_deadline is not None

    @property
    def idle(self) -> bool:
        with self._cond:
            return self.running == 0 and not self._waiting

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def submit(self, req: Request) -> None:
        """Queue a request; raises QueueFull when `max_queue` requests already wait."""
        with self._cond:
            if self._stopping or self.draining:
                raise ShuttingDown("the server is shutting down")
            if len(self._waiting) >= self.max_queue:  # requests whose clients went away hold no place
                live = deque(r for r in self._waiting if not r.cancelled)
                self.cancelled += len(self._waiting) - len(live)
                self._waiting = live
            if len(self._waiting) >= self.max_queue:
                raise QueueFull(f"{len(self._waiting)} requests are waiting (--max-queue {self.max_queue})")
            self._waiting.append(req)
            self._cond.notify()

    def cancel(self, req: Request) -> None:
        """Mark a request cancelled: the scheduler thread drops it (thread-safe, idempotent)."""
        req.cancelled = True

    def _take(self) -> list[Request] | None:
        """The next batch: the oldest waiting request and those after it in the same mode (one engine per batch)."""
        with self._cond:
            while not self._stopping:
                batch, others = [], deque()
                while self._waiting and len(batch) < self.max_batch_size:
                    req = self._waiting.popleft()
                    if req.cancelled:
                        self.cancelled += 1
                    elif batch and req.mode != batch[0].mode:
                        others.append(req)
                    else:
                        req.started = time.monotonic()
                        batch.append(req)
                self._waiting.extendleft(reversed(others))
                if batch:
                    self.running = len(batch)
                    return batch
                self._cond.wait()
            return None

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            try:
                self._run(batch)
            finally:
                self.running = 0
                self.batches += 1

    def _run(self, batch: list[Request]) -> None:
        rows: dict[int, Request] = {}  # row -> request, while the row is open (not answered, cancelled or failed)
        run = None
        mode = batch[0].mode
        try:
            start = self._engine(mode)
            for req in batch:  # (one at a time: a request the engine refuses fails alone)
                try:
                    if run is None:
                        run = start(self.tokenizer, [req.prompt_ids], [req.config], prefill_chunk=self.prefill_chunk,
                                    poll=lambda: self._between_steps(run, rows, mode))
                        rows[0] = req
                    else:
                        rows[run.add(req.prompt_ids, req.config)] = req
                except HamburgerError as e:
                    req.push("error", Refused(str(e)))
            if run is None:
                return
            for event in run:
                req = rows.get(event.row)
                if req is not None:
                    req.push("event", event)
                    if event.finish_reason is not None:  # the row is final: answer now, not at the batch's end
                        self._close(run, rows, event.row, "done")
        except Exception as e:  # a failure ends this batch, never the server
            for req in rows.values():
                req.push("error", e)
            return
        for row in list(rows):  # not reached: every row ends with an event that has a finish_reason
            self._close(run, rows, row, "done")

    def _engine(self, mode: str):
        """The engine of a mode, bound to its model: called with (tokenizer, prompts, configs, ...)."""
        kept = None
        if self.prompt_cache_bytes:
            kept = self.prompt_caches.setdefault(mode, PromptCache(self.prompt_cache_bytes))
        if mode == "verify":
            return partial(VerifyGeneration, self.verify_model, lookup=self.lookup, ngrams=self.ngrams,
                           draft_vocab=self.verify_model.draft_vocab, draft_rows=self.draft_rows, prompt_cache=kept)
        if mode == "verify_fold":
            return partial(VerifyGeneration, self.fold_model, fold=self.fold, lookup=self.lookup, ngrams=self.ngrams,
                           draft_vocab=self.fold_model.draft_vocab, draft_rows=self.draft_rows, prompt_cache=kept)
        return partial(Generation, self.model, prompt_cache=kept)

    def _close(self, run: Generation, rows: dict[int, Request], row: int, answer: str | None) -> None:
        """Answer a row ("done": its result, which `metrics` records; None: nothing) and forget it: a batch that runs
        for hours under continuous traffic keeps no per-request state of the rows it finished."""
        req = rows.pop(row)
        if answer == "done":
            result = run.result(row)
            req.push("done", result)
            self.metrics.observe(result, req.mode, (req.started or req.arrived) - req.arrived)
        run.release(row)

    def _between_steps(self, run: Generation, rows: dict[int, Request], mode: str) -> None:
        """Cancellations (and the drain's cut) take effect at the next macro step; then waiting requests join."""
        cut = self.draining and time.monotonic() >= self._drain_deadline
        for row, req in list(rows.items()):
            if req.cancelled or self._stopping or cut:
                run.cancel(row)
                if req.cancelled:
                    with self._cond:
                        self.cancelled += 1
                elif not cut:
                    req.push("error", ShuttingDown("the server is shutting down"))
                self._close(run, rows, row, "done" if cut and not req.cancelled else None)  # cut: what it has
        self._admit(run, rows, mode)

    def _admit(self, run: Generation, rows: dict[int, Request], mode: str) -> None:
        """Move waiting requests into the running batch while it has free rows. A waiting request of the other
        mode stops admission: the batch drains, and the next one starts with it (no mode waits forever)."""
        with self._cond:
            while self._waiting and not (self._stopping or self.draining) and run.active_rows < self.max_batch_size:
                req = self._waiting[0]
                if not req.cancelled and req.mode != mode:
                    break
                self._waiting.popleft()
                if req.cancelled:
                    self.cancelled += 1
                    continue
                req.started = time.monotonic()
                try:
                    rows[run.add(req.prompt_ids, req.config)] = req
                except HamburgerError as e:  # a request the engine refuses fails alone
                    req.push("error", Refused(str(e)))
                except Exception as e:
                    req.push("error", e)
        self.running = run.active_rows
