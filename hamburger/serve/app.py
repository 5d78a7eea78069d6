"""`hamburger serve`: an OpenAI-compatible HTTP server (FastAPI + uvicorn) over a HAMburger checkpoint.

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health. Requests are
batched by `scheduler.Scheduler` (continuous batching). Every error is an OpenAI-shaped body
{"error": {"message", "type", "param", "code"}}. Any model name is accepted in requests (one model is
served); responses name the served model. Extensions: the request fields `confidence`, `mode`
("hamburger" or "verify", default `--mode`) and `top_k`, and `usage.hamburger` (base_forwards, tau, groups,
kv_slots, kv_slots_ordinary, kv_bytes, confidence, mode).

This module is the FastAPI glue only: `create_app` wires the routes to the pieces, each in its own module:
`protocol` (request parsing and the OpenAI response shapes, pure functions; parsing runs in a worker pool off
the event loop), `lifecycle` (a request against the scheduler: submit, wait or stream, cancel), `scheduler`
(the batching thread), `guard` (413 for oversized bodies, a 500 that keeps the connection for unexpected
faults), `drain` (SIGTERM: the running requests finish before uvicorn stops).
"""


import asyncio
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

from hamburger.errors import HamburgerError
from hamburger.serve import lifecycle
from hamburger.serve.guard import Guard
from hamburger.serve.protocol import (MODES, SSE_HEADERS, SSE_MEDIA_TYPE, APIError, Chunks, authorize,
                                      check_content_type, completion_body, completion_id, model_card, model_list,
                                      prepare, shutting_down)
from hamburger.serve.scheduler import Scheduler

MAX_REQUEST_BYTES = 1 << 20  # a full 8k-token context is ~40 KB of text: 1 MiB leaves room for any real request
DRAIN_TIMEOUT = 30.0
PREFILL_CHUNK = 256  # prompt tokens per prefill chunk: longer prompts are read between the running rows' steps
HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}  # the `code` of Starlette's own errors


def create_app(model, tokenizer, model_name: str = "hamburger", api_key: str | None = None,
               max_batch_size: int = 8, max_queue: int = 64, confidence: float | None = None,
               default_max_tokens: int = 512, max_request_bytes: int = MAX_REQUEST_BYTES,
               prefill_chunk: int | None = PREFILL_CHUNK, mode: str = "hamburger", verify_model=None):
    """The FastAPI app; its scheduler thread starts and stops with the app's lifespan. Set
    `app.state.draining` (see `drain.DrainingServer`) and new requests get 503 while the running ones finish.
    ``mode``: the decoding mode of requests without a `mode` field; ``verify_model``: what verify mode runs
    (see `scheduler.Scheduler`)."""
    from fastapi import FastAPI, Request as HTTPRequest  # (no `from __future__ import annotations` here:
    # FastAPI reads the handlers' annotations, and HTTPRequest is local)
    from fastapi.responses import JSONResponse, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    if mode not in MODES:
        raise HamburgerError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    scheduler = Scheduler(model, tokenizer, max_batch_size, max_queue, prefill_chunk or None, verify_model)
    created = int(time.time())
    workers = ThreadPoolExecutor(2, thread_name_prefix="hamburger-parse")  # JSON, chat template, tokenizer

    @asynccontextmanager
    async def lifespan(app):
        scheduler.start()
        yield
        scheduler.stop()
        workers.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="hamburger", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.scheduler, app.state.draining = scheduler, False
    app.add_middleware(Guard, max_bytes=max_request_bytes)

    @app.exception_handler(APIError)
    async def api_error(request, exc: APIError):
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, exc):
        error = APIError(exc.status_code, str(exc.detail), code=HTTP_CODES.get(exc.status_code))
        return JSONResponse(error.body(), status_code=exc.status_code)

    def refuse_if_draining() -> None:
        if app.state.draining:
            raise shutting_down("the server is shutting down and takes no new requests")

    async def complete(request: HTTPRequest, kind: str):
        refuse_if_draining()
        authorize(request.headers, api_key)
        check_content_type(request.headers.get("content-type"))
        raw = await request.body()  # `Guard` refuses it past --max-request-bytes
        parsed = await asyncio.get_running_loop().run_in_executor(
            workers, prepare, raw, kind, tokenizer, default_max_tokens, confidence, mode)
        refuse_if_draining()
        req = lifecycle.submit(scheduler, parsed.prompt_ids, parsed.config, parsed.mode, model.context_length)
        rid = completion_id(kind)
        if parsed.stream:
            events = lifecycle.stream(scheduler, req, Chunks(kind, rid, model_name, parsed.include_usage))
            return StreamingResponse(events, media_type=SSE_MEDIA_TYPE, headers=SSE_HEADERS)
        result = await lifecycle.collect(scheduler, req, request.is_disconnected)
        return completion_body(kind, rid, model_name, result)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: HTTPRequest):
        return await complete(request, "chat")

    @app.post("/v1/completions")
    async def completions(request: HTTPRequest):
        return await complete(request, "completion")

    @app.get("/v1/models")
    async def models(request: HTTPRequest):
        authorize(request.headers, api_key)
        return model_list(model_name, created)

    @app.get("/v1/models/{name:path}")
    async def one_model(name: str, request: HTTPRequest):
        authorize(request.headers, api_key)
        if name != model_name:
            raise APIError(404, f"the model {name!r} does not exist; this server serves {model_name!r}",
                           param="model", code="model_not_found")
        return model_card(model_name, created)

    @app.get("/health")
    async def health():
        state = {"status": "draining" if app.state.draining else "ok", "model": model_name,
                 "running": scheduler.running, "waiting": scheduler.waiting, "batches": scheduler.batches,
                 "cancelled": scheduler.cancelled}
        return JSONResponse(state, status_code=503 if app.state.draining else 200)

    return app


# ------------------------------------------------------------------------------------ CLI
def cmd_serve(args) -> int:
    import uvicorn

    from hamburger.cli.main import load_model, set_threads
    from hamburger.core.config import check_confidence
    from hamburger.serve.drain import GRACE_S, DrainingServer

    if args.confidence is not None:
        check_confidence(args.confidence, "--confidence")
    for name in ("max_batch_size", "max_queue", "max_tokens", "max_request_bytes"):
        if getattr(args, name) < 1:
            raise HamburgerError(f"--{name.replace('_', '-')} must be >= 1")
    if args.prefill_chunk < 0:
        raise HamburgerError("--prefill-chunk must be >= 0 (0: no chunking)")
    if args.drain_timeout < 0:
        raise HamburgerError("--drain-timeout must be >= 0")
    api_key = args.api_key or os.environ.get("HAMBURGER_API_KEY") or None
    set_threads(args.threads)
    from hamburger.engine.verify import on_base

    model, tokenizer, _, reference = load_model(args.model, args.dtype, args.base, reference=True)
    name = args.served_model_name or Path(args.model or "hamburger").resolve().name
    app = create_app(model, tokenizer, name, api_key, args.max_batch_size, args.max_queue, args.confidence,
                     args.max_tokens, args.max_request_bytes, args.prefill_chunk, args.mode, on_base(model, reference))
    if api_key is None and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"hamburger serve: warning: listening on {args.host} without --api-key", file=sys.stderr)
    print(f"hamburger serve: {name} on http://{args.host}:{args.port}/v1 (batches of up to {args.max_batch_size}, "
          f"queue {args.max_queue})", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level,
                            timeout_graceful_shutdown=int(GRACE_S))
    DrainingServer(config, app, args.drain_timeout).run()
    return 0


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve a HAMburger model over an OpenAI-compatible HTTP API",
                       description="Serve POST /v1/chat/completions, POST /v1/completions, GET /v1/models and "
                                   "GET /health. Concurrent requests are batched (up to --max-batch-size rows; waiting "
                                   "requests join the running batch as rows finish); more than --max-queue waiting requests get 429.")
    p.add_argument("--model", default=None, help="HAMburger checkpoint folder (default: the bundled trained model)")
    p.add_argument("--base", default=None, help="where the checkpoint's base model is, if it moved")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--api-key", default=None,
                   help="require 'Authorization: Bearer KEY' on /v1 (default: $HAMBURGER_API_KEY, else no key)")
    p.add_argument("--served-model-name", default=None, help="model id shown by /v1/models (default: folder name)")
    p.add_argument("--max-batch-size", type=int, default=8, help="most requests generated together (default 8)")
    p.add_argument("--max-queue", type=int, default=64,
                   help="most requests waiting for a batch; more are refused with 429 (default 64)")
    p.add_argument("--max-tokens", type=int, default=512,
                   help="completion tokens when a request sets no max_tokens (default 512)")
    p.add_argument("--confidence", type=float, default=None,
                   help="default knob in (0, 1] for requests without 'confidence' (default: the checkpoint's)")
    p.add_argument("--mode", default="hamburger", choices=MODES,
                   help="decoding mode of requests without a 'mode' field: hamburger (merged groups, the confidence "
                        "knob; one KV slot per group) or verify (lossless: the micro-step decoder drafts, the "
                        "unchanged base verifies; the base's own output) (default hamburger)")
    p.add_argument("--max-request-bytes", type=int, default=MAX_REQUEST_BYTES,
                   help=f"largest request body; larger ones get 413 before they are read (default {MAX_REQUEST_BYTES})")
    p.add_argument("--prefill-chunk", type=int, default=PREFILL_CHUNK,
                   help="prefill longer prompts this many tokens at a time, between the running requests' steps, "
                        "so one long prompt does not stall them (0: whole prompts at once; default %(default)s)")
    p.add_argument("--drain-timeout", type=float, default=DRAIN_TIMEOUT,
                   help="on SIGTERM/SIGINT: seconds the running requests get to finish before they are cut "
                        "(finish_reason 'length'); new requests get 503 meanwhile (default %(default)s)")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="compute dtype")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn log level (default info)")
    p.set_defaults(func=cmd_serve)
