"""One HTTP request's life against the scheduler: submit it, wait for its answer (whole or streamed), cancel it.

A `scheduler.Request` carries an asyncio queue that receives ("event", GroupEvent)..., then ("done", result)
or ("error", exception); this module is the only reader of that queue:

- `submit` queues a request (400 if the prompt fills the context, 429 with Retry-After when the queue is
  full, 503 while the scheduler drains);
- `collect` waits for a non-streamed request's result, watching the client: one that goes away cancels it;
- `stream` is the async generator of a streamed answer's server-sent events (`protocol.Chunks`); a client
  that goes away (the generator is closed before the end) cancels it. Once the headers are out an error
  can only be told in the stream: it ends with an OpenAI-shaped error event.

A cancelled request frees its batch row at the scheduler's next macro step. No web framework here: the
routes (`app.py`) hand in what they know of the client (`is_disconnected`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from hamburger.engine.generate import GenerationResult
from hamburger.engine.sampling import DecodingConfig
from hamburger.serve.protocol import APIError, Chunks, bad, internal_error, shutting_down, sse
from hamburger.serve.scheduler import QueueFull, Request, Scheduler, ShuttingDown

log = logging.getLogger("hamburger.serve")
WATCH_S = 0.25  # how often a waiting non-streamed request checks that its client is still there


def failure(error: BaseException) -> APIError:
    """The answer to a request the scheduler failed: 503 while it drains, else 500."""
    if isinstance(error, ShuttingDown):
        return shutting_down(str(error))
    return APIError(500, f"generation failed: {error}", "server_error")


def submit(scheduler: Scheduler, ids: list[int], config: DecodingConfig, mode: str, context_length: int) -> Request:
    """Queue a request on the running event loop's behalf (see the module doc for the refusals)."""
    if len(ids) >= context_length:
        raise bad(f"this model's maximum context length is {context_length} tokens; the prompt has "
                  f"{len(ids)} tokens, leaving no room to generate", code="context_length_exceeded")
    req = Request(ids, config, asyncio.get_running_loop(), mode=mode)
    try:
        scheduler.submit(req)
    except QueueFull as e:
        raise APIError(429, f"the server is busy: {e}; retry later", "rate_limit_error", code="queue_full",
                       headers={"Retry-After": "1"}) from e
    except ShuttingDown as e:
        raise failure(e) from e
    return req


async def _watch(scheduler: Scheduler, req: Request, is_disconnected: Callable[[], Awaitable[bool]]) -> None:
    while not await is_disconnected():
        await asyncio.sleep(WATCH_S)
    scheduler.cancel(req)
    req.queue.put_nowait(("gone", None))


async def collect(scheduler: Scheduler, req: Request,
                  is_disconnected: Callable[[], Awaitable[bool]]) -> GenerationResult:
    """Wait for a non-streamed request's result; a client that goes away cancels it (499)."""
    watcher = asyncio.create_task(_watch(scheduler, req, is_disconnected))
    kind = None
    try:
        while True:
            kind, value = await req.queue.get()
            if kind == "done":
                return value
            if kind == "error":
                raise failure(value)
            if kind == "gone":
                raise APIError(499, "the client went away")
    finally:
        watcher.cancel()
        if kind not in ("done", "error"):
            scheduler.cancel(req)


async def stream(scheduler: Scheduler, req: Request, chunks: Chunks) -> AsyncIterator[str]:
    """The server-sent events of a streamed request: a role chunk (chat), one chunk per group of tokens,
    then the final chunk, the usage chunk (if asked) and [DONE]; or an error event."""
    done, shown = False, 0
    try:
        if chunks.kind == "chat":
            yield sse(chunks.role())
        while True:
            what, value = await req.queue.get()
            if what == "event":
                yield sse(chunks.group(value, shown))
                shown += len(value.text)
                continue
            done = True
            if what == "error":
                yield sse(failure(value).body())
                return
            for payload in chunks.ending(value, shown):
                yield sse(payload)
            return
    except Exception as e:  # noqa: BLE001 - the headers are out: end the stream with an error event
        log.exception("stream %s failed", chunks.rid)
        yield sse(internal_error(e).body())
    finally:
        if not done:  # the client went away: free its row
            scheduler.cancel(req)
