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

from .generate import Generation
from .sampling import GenerationConfig


class QueueFull(Exception):
    """More requests are waiting than the queue holds."""


class ShuttingDown(Exception):
    """The scheduler is stopping and takes no more requests."""


@dataclass(eq=False)
class Request:
    """One generation request; its queue receives ("event", GroupEvent)..., then ("done", result) or
    ("error", exception)."""

    prompt_ids: list[int]
    config: GenerationConfig
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    cancelled: bool = False

    def push(self, kind: str, value) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, value))
        except RuntimeError:  # the event loop is closed: nobody listens any more
            pass


class Scheduler:
    def __init__(self, model, tokenizer, max_batch_size: int = 8, max_queue: int = 64,
                 prefill_chunk: int | None = None):
        if max_batch_size < 1 or max_queue < 1:
            raise ValueError("max_batch_size and max_queue must be >= 1")
        self.model, self.tokenizer, self.prefill_chunk = model, tokenizer, prefill_chunk
        self.max_batch_size, self.max_queue = max_batch_size, max_queue
        self._waiting: deque[Request] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._drain_deadline: float | None = None  # time.monotonic() when running rows are cut
        self._thread = threading.Thread(target=self._loop, name="hamburger-scheduler", daemon=True)
        self.running = 0  # rows of the current batch (answered rows count until the batch ends)
        self.batches = 0  # batches run so far
        self.cancelled = 0  # requests dropped because their client went away

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
        with self._cond:
            while not self._stopping:
                batch = []
                while self._waiting and len(batch) < self.max_batch_size:
                    req = self._waiting.popleft()
                    if not req.cancelled:
                        batch.append(req)
                    else:
                        self.cancelled += 1
                if batch:
                    self.running = len(batch)
                    return batch
                self._cond.wait()
            return None

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            try:
                self._run(batch)
            except Exception as e:  # a failure ends this batch, never the server
                for req in batch:
                    req.push("error", e)
            finally:
                self.running = 0
                self.batches += 1

    def _run(self, batch: list[Request]) -> None:
        closed = [False] * len(batch)  # answered, cancelled or failed: nothing more goes to it
        run = Generation(self.model, self.tokenizer, [r.prompt_ids for r in batch], [r.config for r in batch],
                         prefill_chunk=self.prefill_chunk, poll=lambda: self._between_steps(run, batch, closed))
        for event in run:
            row = event.row
            if not closed[row]:
                batch[row].push("event", event)
                if event.finish_reason is not None:  # the row's state is final: answer now, not at the batch's end
                    closed[row] = True
                    batch[row].push("done", run.result(row))
        for req, result, done in zip(batch, run.results, closed):
            if not done:  # not reached: every row ends with an event that has a finish_reason
                req.push("done", result)

    def _between_steps(self, run: Generation, batch: list[Request], closed: list[bool]) -> None:
        """Cancellations (and the drain's cut) take effect at the next macro step; then waiting requests join."""
        cut = self.draining and time.monotonic() >= self._drain_deadline
        for i, req in enumerate(batch):
            if not closed[i] and (req.cancelled or self._stopping or cut):
                closed[i] = True
                run.cancel(i)
                if req.cancelled:
                    with self._cond:
                        self.cancelled += 1
                elif cut:  # the drain time is up: answer with what the row has
                    req.push("done", run.result(i))
                else:
                    req.push("error", ShuttingDown("the server is shutting down"))
        self._admit(run, batch, closed)

    def _admit(self, run: Generation, batch: list[Request], closed: list[bool]) -> None:
        """Move waiting requests into the running batch while it has free rows."""
        with self._cond:
            while self._waiting and not (self._stopping or self.draining) and run.active_rows < self.max_batch_size:
                req = self._waiting.popleft()
                if req.cancelled:
                    self.cancelled += 1
                    continue
                try:
                    run.add(req.prompt_ids, req.config)
                except Exception as e:  # a request the engine refuses fails alone
                    req.push("error", e)
                    continue
                batch.append(req)
                closed.append(False)
        self.running = run.active_rows
