"""One HTTP request's life against the scheduler: submit it, wait for its answer (whole or streamed), cancel it.

A `scheduler.Request` carries an asyncio queue that receives ("event", GroupEvent)..., then ("done", result)
or ("error", exception); this module is the only reader of that queue:

- `submit` queues a request (400 if the prompt fills the context, 429 with Retry-After when the queue is
  full, 503 while the scheduler drains); `submit_all` queues one per answer of an HTTP request (`n` per prompt), all
  or none;
- `collect` waits for a non-streamed request's result, watching the client: one that goes away cancels it;
  `collect_all` waits for all of them (one that fails cancels the others);
- `stream` is the async generator of a streamed HTTP request's server-sent events (`protocol.Chunks`), its answers'
  chunks interleaved as their groups come; a client that goes away (the generator is closed before the end) cancels
  them. Once the headers are out an error can only be told in the stream: it ends with an OpenAI-shaped error event.

A cancelled request frees its batch row at the scheduler's next macro step. No web framework here: the
routes (`app.py`) hand in what they know of the client (`is_disconnected`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing

from hamburger.engine.generate import GenerationResult
from hamburger.engine.sampling import DecodingConfig
from hamburger.serve.protocol import (APIError, Chunks, Echo, StreamedAnswer, bad, internal_error, shutting_down,
                                      sse)
from hamburger.serve.scheduler import QueueFull, Refused, Request, Scheduler, ShuttingDown

log = logging.getLogger("hamburger.serve")
WATCH_S = 0.25  # how often a waiting non-streamed request checks that its client is still there


def failure(error: BaseException) -> APIError:
    """The answer to a request the scheduler failed: 503 while it drains, 400 for settings the engine refused, else
    500."""
    if isinstance(error, ShuttingDown):
        return shutting_down(str(error))
    if isinstance(error, Refused):
        return bad(str(error), code="invalid_value")
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


def submit_all(scheduler: Scheduler, prompts: list[list[int]], configs: list[DecodingConfig], mode: str,
               context_length: int) -> list[Request]:
    """One request per answer of one HTTP request (its prompt's ids and its config); if one is refused, those queued
    are cancelled."""
    reqs: list[Request] = []
    try:
        for ids, config in zip(prompts, configs, strict=True):
            reqs.append(submit(scheduler, ids, config, mode, context_length))
    except APIError:
        for req in reqs:
            scheduler.cancel(req)
        raise
    return reqs


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


async def collect_all(scheduler: Scheduler, reqs: list[Request],
                      is_disconnected: Callable[[], Awaitable[bool]]) -> list[GenerationResult]:
    """The results of the answers of one HTTP request, in order (`collect` each); one that fails cancels the rest."""
    tasks = [asyncio.ensure_future(collect(scheduler, req, is_disconnected)) for req in reqs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:  # (each cancels its request as it ends)
            task.cancel()
        raise


async def _merged(reqs: list[Request]) -> AsyncIterator[tuple[int, str, object]]:
    """(answer index, kind, value) from the requests' queues as they come, until each has ended (done or error)."""
    merged: asyncio.Queue = asyncio.Queue()

    async def forward(index: int, req: Request) -> None:
        while True:
            what, value = await req.queue.get()
            merged.put_nowait((index, what, value))
            if what != "event":
                return
    tasks = [asyncio.create_task(forward(i, req)) for i, req in enumerate(reqs)]
    try:
        for _ in range(len(reqs)):
            while True:
                item = await merged.get()
                yield item
                if item[1] != "event":
                    break
    finally:
        for task in tasks:
            task.cancel()


async def stream(scheduler: Scheduler, reqs: list[Request], chunks: Chunks,
                 echoes: list[Echo] | None = None) -> AsyncIterator[str]:
    """The server-sent events of a streamed HTTP request: its `payloads`, each an event."""
    async with aclosing(payloads(scheduler, reqs, chunks, echoes)) as items:
        async for payload in items:
            yield sse(payload)


async def payloads(scheduler: Scheduler, reqs: list[Request], chunks: Chunks,
                   echoes: list[Echo] | None = None) -> AsyncIterator[dict | str]:
    """What a streamed request sends: for each answer a role chunk (chat), one chunk per group of tokens (with
    ``echoes``, the first begins with its answer's prompt) and its final chunk, interleaved as they come; then the
    usage chunk (if asked) and "[DONE]"; or, when an answer fails, an error body (the others are cancelled)."""
    answers = [StreamedAnswer(chunks, index, echoes[index] if echoes else None, prompt_ids=req.prompt_ids)
               for index, req in enumerate(reqs)]
    results, ended = [None] * len(reqs), [False] * len(reqs)
    try:
        if chunks.kind == "chat":
            for index in range(len(reqs)):
                yield chunks.role(index)
        async with aclosing(_merged(reqs)) as items:
            async for index, what, value in items:
                if what == "event":
                    yield answers[index].group(value)
                    continue
                ended[index] = True
                if what == "error":
                    yield failure(value).body()
                    return
                results[index] = value
                yield answers[index].finish(value)
        for payload in chunks.close(results):
            yield payload
    except Exception as e:  # noqa: BLE001 - the headers are out: end the stream with an error event
        log.exception("stream %s failed", chunks.rid)
        yield internal_error(e).body()
    finally:
        for req, over in zip(reqs, ended):
            if not over:  # the client went away, or another answer failed: free its row
                scheduler.cancel(req)
