"""A pure ASGI middleware around `hamburger serve`'s app: request-size limit and unexpected errors.

- A body larger than `max_bytes` gets 413 before it is read: at once from its Content-Length, or as soon
  as the bytes received pass the limit (chunked uploads). Nothing larger is ever held in memory.
- An exception that no route turned into an `APIError` becomes an OpenAI-shaped 500 and is logged; the
  connection stays usable (Starlette's own 500 handler re-raises after answering, and uvicorn then
  closes the keep-alive connection under the next request).
"""

from __future__ import annotations

import json
import logging

from hamburger.serve.protocol import APIError, internal_error

log = logging.getLogger("hamburger.serve")


class BodyTooLarge(Exception):
    pass


async def send_error(send, error: APIError) -> None:
    body = json.dumps(error.body()).encode()
    await send({"type": "http.response.start", "status": error.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    def too_large(self, size: str) -> APIError:
        return APIError(413, f"the request body is {size} bytes; this server takes at most {self.max_bytes} "
                             f"(--max-request-bytes)", code="request_too_large")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > self.max_bytes:
            return await send_error(send, self.too_large(declared))
        started, received = False, 0

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return message

        async def watching_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except BodyTooLarge:
            if not started:
                await send_error(send, self.too_large(f"over {self.max_bytes}"))
        except Exception as e:  # noqa: BLE001 - the last line of defence: answer, log, keep serving
            log.exception("unexpected error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await send_error(send, internal_error(e))
            # once a response has started (a stream), the route itself ends it with an error event
