"""Graceful shutdown for `hamburger serve`: drain the running requests before uvicorn stops.

uvicorn's own shutdown closes the listening socket at once and, after `timeout_graceful_shutdown`, cancels
whatever still runs: a stream is cut with no finish_reason and no `[DONE]`, a non-streamed request gets a
plain-text 500. `DrainingServer` puts a drain in front of it. On the first SIGTERM or SIGINT:

1. the app answers new requests 503 (`shutting_down`, OpenAI-shaped) and `/health` answers 503 "draining";
   requests still waiting for a batch get the same 503;
2. the running rows go on until they finish, for at most `drain_timeout` seconds; then each is cut and
   answered with what it has (finish_reason "length"; a stream gets its final chunk, usage and `[DONE]`);
3. once the scheduler is idle, uvicorn's normal shutdown runs (the answers in flight are sent first).

A second signal skips the drain: uvicorn's own shutdown (SIGINT twice forces the exit).
"""

from __future__ import annotations

import logging
import time

import uvicorn

log = logging.getLogger("hamburger.serve")
GRACE_S = 5.0  # after the drain time, how long to wait for the cut rows' answers to go out


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app, drain_timeout: float):
        super().__init__(config)
        self.app, self.drain_timeout = app, drain_timeout
        self.signalled = False
        self.drain_started: float | None = None

    def handle_exit(self, sig, frame) -> None:
        # A signal handler only sets a flag: the drain starts on the event loop's next tick (locks are safe there).
        if self.signalled:
            return super().handle_exit(sig, frame)
        self.signalled = True

    def start_drain(self) -> None:
        self.drain_started = time.monotonic()
        self.app.state.draining = True
        self.app.state.scheduler.drain(self.drain_timeout)
        log.warning("draining: new requests get 503; running ones have %.0f s to finish", self.drain_timeout)

    async def on_tick(self, counter: int) -> bool:
        if self.signalled and self.drain_started is None:
            self.start_drain()
        if self.drain_started is not None and not self.should_exit:
            late = time.monotonic() > self.drain_started + self.drain_timeout + GRACE_S
            if self.app.state.scheduler.idle or late:
                self.should_exit = True
        return await super().on_tick(counter)
