"""`hamburger serve`: an OpenAI-compatible HTTP server (FastAPI + uvicorn) over a HAMburger checkpoint.

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health. Requests are
batched by `scheduler.Scheduler` (continuous batching). Every error is an OpenAI-shaped body
{"error": {"message", "type", "param", "code"}}. Any model name is accepted in requests (one model is
served); responses name the served model. Extensions: the request fields `confidence`, `mode`
("hamburger" or "verify", default `--mode`) and `top_k`, and `usage.hamburger` (base_forwards, tau, groups,
kv_slots, kv_slots_ordinary, kv_bytes, confidence, mode).

Around the routes: `serve_request` parses a body (pure functions, run in a worker pool off the event loop),
`serve_guard` refuses oversized bodies (413) and turns unexpected faults into a 500 that keeps the
connection, `serve_drain` drains the running requests on SIGTERM before uvicorn stops.
"""


import asyncio
import hmac
import json
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from hamburger.errors import HamburgerError
from hamburger.engine.generate import GenerationResult
from hamburger.engine.sampling import GenerationConfig
from hamburger.serve.scheduler import QueueFull, Request, Scheduler, ShuttingDown
from hamburger.serve.guard import Guard
from hamburger.engine.verify import VerifyResult
from hamburger.serve.protocol import MODES, APIError, bad, check_content_type, prepare

log = logging.getLogger("hamburger.serve")
MAX_REQUEST_BYTES = 1 << 20  # a full 8k-token context is ~40 KB of text: 1 MiB leaves room for any real request
DRAIN_TIMEOUT = 30.0
PREFILL_CHUNK = 256  # prompt tokens per prefill chunk: longer prompts are read between the running rows' steps

# "cancelled": a row cut when the drain time ran out (a client that went away is never answered)
FINISH = {"eos": "stop", "stop": "stop", "length": "length", "cancelled": "length"}


# ------------------------------------------------------------------------------------ responses
def usage(r: GenerationResult) -> dict:
    return {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.tokens,
            "total_tokens": r.prompt_tokens + r.tokens,
            "hamburger": {"base_forwards": r.forwards, "tau": round(r.tau, 4), "groups": len(r.groups),
                          "kv_slots": r.kv_slots, "kv_slots_ordinary": r.kv_slots_ordinary, "kv_bytes": r.kv_bytes,
                          "confidence": r.confidence, "mode": "verify" if isinstance(r, VerifyResult) else "hamburger"}}


def sse(data) -> str:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def create_app(model, tokenizer, model_name: str = "hamburger", api_key: str | None = None,
               max_batch_size: int = 8, max_queue: int = 64, confidence: float | None = None,
               default_max_tokens: int = 512, max_request_bytes: int = MAX_REQUEST_BYTES,
               prefill_chunk: int | None = PREFILL_CHUNK, mode: str = "hamburger", verify_model=None):
    """The FastAPI app; its scheduler thread starts and stops with the app's lifespan. Set
    `app.state.draining` (see `serve_drain`) and new requests get 503 while the running ones finish.
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
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        return JSONResponse(APIError(exc.status_code, str(exc.detail), code=code).body(), status_code=exc.status_code)

    def authorize(request: HTTPRequest) -> None:
        if api_key is None:
            return
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header[:7].lower() == "bearer " else ""
        if not hmac.compare_digest(given.encode(), api_key.encode()):
            raise APIError(401, "Incorrect API key provided" if given else
                           "Missing API key: send 'Authorization: Bearer KEY'", code="invalid_api_key")

    def refuse_if_draining() -> None:
        if app.state.draining:
            raise failure(ShuttingDown("the server is shutting down and takes no new requests"))

    def submit(ids: list[int], config: GenerationConfig, mode: str) -> Request:
        if len(ids) >= model.context_length:
            raise bad(f"this model's maximum context length is {model.context_length} tokens; the prompt has "
                      f"{len(ids)} tokens, leaving no room to generate", code="context_length_exceeded")
        req = Request(ids, config, asyncio.get_running_loop(), mode=mode)
        try:
            scheduler.submit(req)
        except QueueFull as e:
            raise APIError(429, f"the server is busy: {e}; retry later", "rate_limit_error", code="queue_full",
                           headers={"Retry-After": "1"}) from e
        except ShuttingDown as e:
            raise APIError(503, str(e), "server_error", code="shutting_down") from e
        return req

    def failure(value) -> APIError:
        if isinstance(value, ShuttingDown):
            return APIError(503, str(value), "server_error", code="shutting_down")
        return APIError(500, f"generation failed: {value}", "server_error")

    def finished(result: GenerationResult) -> str:
        return FINISH[result.finish_reason]

    async def collect(req: Request, request: HTTPRequest) -> GenerationResult:
        """Wait for a non-streamed request's result; a client that goes away cancels it."""
        async def watch():
            while not await request.is_disconnected():
                await asyncio.sleep(0.25)
            scheduler.cancel(req)
            req.queue.put_nowait(("gone", None))

        watcher = asyncio.create_task(watch())
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

    def streamer(req: Request, kind: str, rid: str, include_usage: bool):
        obj = "chat.completion.chunk" if kind == "chat" else "text_completion"

        def chunk(text: str | None, finish: str | None, role: bool = False) -> dict:
            if kind == "chat":
                delta = {} if text is None else {"content": text}
                if role:
                    delta = {"role": "assistant", "content": ""}
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
            out = {"id": rid, "object": obj, "created": int(time.time()), "model": model_name, "choices": [choice]}
            if include_usage:
                out["usage"] = None
            return out

        async def events():
            done, shown = False, 0
            try:
                if kind == "chat":
                    yield sse(chunk(None, None, role=True))
                while True:
                    what, value = await req.queue.get()
                    if what == "event":
                        shown += len(value.text)
                        yield sse(chunk(value.text, None))
                        continue
                    done = True
                    try:
                        if what == "error":
                            raise failure(value)
                        reason = finished(value)
                    except APIError as e:
                        yield sse(e.body())
                        return
                    rest = value.text[shown:]  # text held back (a possible stop string) when a row is cut
                    yield sse(chunk(rest or (None if kind == "chat" else ""), reason))
                    if include_usage:
                        yield sse({"id": rid, "object": obj, "created": int(time.time()), "model": model_name,
                                   "choices": [], "usage": usage(value)})
                    yield sse("[DONE]")
                    return
            except Exception as e:  # noqa: BLE001 - the headers are out: end the stream with an error event
                log.exception("stream %s failed", rid)
                yield sse(APIError(500, f"internal error: {type(e).__name__}: {e}", "server_error",
                                   code="internal_error").body())
            finally:
                if not done:  # the client went away: free its row
                    scheduler.cancel(req)

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def handle(request: HTTPRequest, kind: str):
        refuse_if_draining()
        authorize(request)
        check_content_type(request.headers.get("content-type"))
        raw = await request.body()  # `Guard` refuses it past --max-request-bytes
        parsed = await asyncio.get_running_loop().run_in_executor(
            workers, prepare, raw, kind, tokenizer, default_max_tokens, confidence, mode)
        refuse_if_draining()
        req = submit(parsed.prompt_ids, parsed.config, parsed.mode)
        rid = f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex}"
        if parsed.stream:
            return streamer(req, kind, rid, parsed.include_usage)
        result = await collect(req, request)
        reason = finished(result)
        if kind == "chat":
            choice = {"index": 0, "message": {"role": "assistant", "content": result.text}, "logprobs": None,
                      "finish_reason": reason}
        else:
            choice = {"index": 0, "text": result.text, "logprobs": None, "finish_reason": reason}
        return {"id": rid, "object": "chat.completion" if kind == "chat" else "text_completion",
                "created": int(time.time()), "model": model_name, "choices": [choice], "usage": usage(result)}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: HTTPRequest):
        return await handle(request, "chat")

    @app.post("/v1/completions")
    async def completions(request: HTTPRequest):
        return await handle(request, "completion")

    def model_card() -> dict:
        return {"id": model_name, "object": "model", "created": created, "owned_by": "hamburger"}

    @app.get("/v1/models")
    async def models(request: HTTPRequest):
        authorize(request)
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{name:path}")
    async def one_model(name: str, request: HTTPRequest):
        authorize(request)
        if name != model_name:
            raise APIError(404, f"the model {name!r} does not exist; this server serves {model_name!r}",
                           param="model", code="model_not_found")
        return model_card()

    @app.get("/health")
    async def health():
        state = {"status": "draining" if app.state.draining else "ok", "model": model_name,
                 "running": scheduler.running, "waiting": scheduler.waiting, "batches": scheduler.batches,
                 "cancelled": scheduler.cancelled}
        return JSONResponse(state, status_code=503 if app.state.draining else 200)

    return app
