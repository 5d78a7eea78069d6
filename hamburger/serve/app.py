"""`hamburger serve`: an OpenAI-compatible HTTP server (FastAPI + uvicorn) over a HAMburger checkpoint.

Endpoints: POST /v1/chat/completions, POST /v1/completions, POST /v1/responses (answered as a chat request:
`responses`; GET and DELETE /v1/responses/{id} for the kept ones, `response_store`), GET /v1/models, GET /health,
GET /metrics (Prometheus' format, `metrics`), POST /tokenize and /detokenize (vLLM's, also under /v1: `tokenize`).
Requests are batched by `scheduler.Scheduler` (continuous batching). Every error is an OpenAI-shaped body
{"error": {"message", "type", "param", "code"}}. Any model name is accepted in requests (one model is
served); responses name the served model. A request's `n` answers are rows of the scheduler's batches (`lifecycle`'s
`submit_all`, `collect_all`, `stream`). Log-probabilities (`logprobs`, chat's `top_logprobs`) are those of the
distribution each token was chosen from (`protocol.TokenLogprobs`). Extensions: the request fields `confidence`,
`reread`, `mode` ("hamburger", "verify" or "verify_fold", default `--mode`), `top_k`, `repetition_penalty`, vLLM's
`min_p`, `min_tokens`, `ignore_eos`, `stop_token_ids`, `allowed_token_ids`, `include_stop_str_in_output`,
`truncate_prompt_tokens`, `prompt_logprobs` (not streamed), `return_token_ids`, `skip_special_tokens` and
`bad_words`, and `usage.hamburger` (base_forwards, tau, groups, kv_slots, kv_slots_ordinary, kv_bytes, rereads,
confidence, mode); each choice's `stop_reason` (vLLM's: the stop string or stop token id that ended it, null at the
model's own end).

This module is the FastAPI glue only: `create_app` wires the routes to the pieces, each in its own module:
`protocol` (request parsing and the OpenAI response shapes, pure functions; parsing runs in a worker pool off
the event loop), `lifecycle` (a request against the scheduler: submit, wait or stream, cancel), `scheduler`
(the batching thread), `guard` (413 for oversized bodies, a 500 that keeps the connection for unexpected
faults), `drain` (SIGTERM: the running requests finish before uvicorn stops).
"""


import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from hamburger.engine.prompt import eos_ids
from hamburger.errors import HamburgerError
from hamburger.serve import lifecycle, openmp, responses, tokenize
from hamburger.serve.guard import Guard
from hamburger.serve.protocol import (MODES, SSE_HEADERS, SSE_MEDIA_TYPE, APIError, Chunks, TokenLogprobs, authorize,
                                      check_content_type, completion_body, completion_id, engine_checked, model_card,
                                      model_list, prepare, shutting_down, with_vllm_fields)
from hamburger.serve.response_store import ResponseStore
from hamburger.serve.scheduler import Scheduler

MAX_REQUEST_BYTES = 1 << 20  # a full 8k-token context is ~40 KB of text: 1 MiB leaves room for any real request
DRAIN_TIMEOUT = 30.0
PREFILL_CHUNK = 256  # prompt tokens per prefill chunk: longer prompts are read between the running rows' steps
HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}  # the `code` of Starlette's own errors
METRICS_MEDIA_TYPE = "text/plain; version=0.0.4"  # Prometheus' text exposition format


def response_not_found(rid: str) -> APIError:
    return APIError(404, f"no response {rid!r} is kept (it was not stored, or no longer is)", param="response_id",
                    code="not_found")


def create_app(model, tokenizer, model_name: str = "hamburger", api_key: str | None = None,
               max_batch_size: int = 8, max_queue: int = 64, confidence: float | None = None,
               default_max_tokens: int = 512, max_request_bytes: int = MAX_REQUEST_BYTES,
               prefill_chunk: int | None = PREFILL_CHUNK, mode: str = "hamburger", verify_model=None,
               fold=None, lookup=None, draft_rows: int | None = None, ngrams=None, fold_model=None,
               prompt_cache_mib: float = 0):
    """The FastAPI app; its scheduler thread starts and stops with the app's lifespan. Set
    `app.state.draining` (see `drain.DrainingServer`) and new requests get 503 while the running ones finish.
    ``mode``: the decoding mode of requests without a `mode` field; ``verify_model``, ``fold``, ``lookup``,
    ``draft_rows``, ``ngrams`` and ``fold_model``: what the verify modes run (see `scheduler.Scheduler`).
    ``prompt_cache_mib``: the MiB of prompts' KV caches each mode keeps across requests (0: none)."""
    from fastapi import FastAPI, Request as HTTPRequest  # (no `from __future__ import annotations` here:
    # FastAPI reads the handlers' annotations, and HTTPRequest is local)
    from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    if mode not in MODES:
        raise HamburgerError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    scheduler = Scheduler(model, tokenizer, max_batch_size, max_queue, prefill_chunk or None, verify_model, fold,
                          lookup, draft_rows, ngrams, fold_model, int(prompt_cache_mib * 2 ** 20))
    eos = set(eos_ids(model, tokenizer))  # (what `protocol.engine_checked` checks requests against)
    created = int(time.time())
    stored = ResponseStore()  # the Responses API's kept responses
    workers = ThreadPoolExecutor(2, thread_name_prefix="hamburger-parse")  # JSON, chat template, tokenizer

    @asynccontextmanager
    async def lifespan(app):
        # The event loop's thread (as a rule the one that loaded the model: `serve`'s main thread, or a script's that
        # runs uvicorn) has done its torch work: its OpenMP workers go, so the scheduler's thread decodes at full speed.
        openmp.release_pool()
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
        loop, asked = asyncio.get_running_loop(), None
        if kind == "response":  # (answered as a chat request: `responses`)
            parsed, asked = await loop.run_in_executor(
                workers, responses.prepare_response, raw, tokenizer, default_max_tokens, confidence, mode, stored)
            kind = "chat"
        else:
            parsed = await loop.run_in_executor(
                workers, prepare, raw, kind, tokenizer, default_max_tokens, confidence, mode)
        await loop.run_in_executor(workers, engine_checked, parsed.config, eos, model.vocab_size, tokenizer)
        refuse_if_draining()
        reqs = lifecycle.submit_all(scheduler, *parsed.answers(), parsed.mode, model.context_length)
        rid = completion_id(kind)
        logprobs = None if parsed.logprobs is None else TokenLogprobs(kind, tokenizer, parsed.logprobs,
                                                                      parsed.config.skip_special_tokens)
        if parsed.stream:
            chunks = Chunks(kind, rid, model_name, parsed.include_usage, logprobs, parsed.n, parsed.tools,
                            parsed.token_ids)
            if asked is None:
                events = lifecycle.stream(scheduler, reqs, chunks, parsed.echoes())
            else:
                events = responses.stream(lifecycle.payloads(scheduler, reqs, chunks), model_name, asked, stored)
            return StreamingResponse(events, media_type=SSE_MEDIA_TYPE, headers=SSE_HEADERS)
        results = await lifecycle.collect_all(scheduler, reqs, request.is_disconnected)
        body = with_vllm_fields(completion_body(kind, rid, model_name, results, logprobs, parsed.echoes(), parsed.n,
                                                parsed.tools), parsed, results, tokenizer)
        return body if asked is None else responses.kept(stored, asked, responses.response_body(model_name, asked, body))

    @app.post("/v1/chat/completions")
    async def chat_completions(request: HTTPRequest):
        return await complete(request, "chat")

    @app.post("/v1/completions")
    async def completions(request: HTTPRequest):
        return await complete(request, "completion")

    @app.post("/v1/responses")
    async def create_response(request: HTTPRequest):
        return await complete(request, "response")

    @app.get("/v1/responses/{rid}")
    async def stored_response(rid: str, request: HTTPRequest):
        authorize(request.headers, api_key)
        found = stored.get(rid)
        if found is None:
            raise response_not_found(rid)
        return found[0]

    @app.delete("/v1/responses/{rid}")
    async def delete_response(rid: str, request: HTTPRequest):
        authorize(request.headers, api_key)
        if not stored.delete(rid):
            raise response_not_found(rid)
        return {"id": rid, "object": "response.deleted", "deleted": True}

    @app.get("/v1/models")
    async def models(request: HTTPRequest):
        authorize(request.headers, api_key)
        return model_list(model_name, created, model.context_length)

    @app.get("/v1/models/{name:path}")
    async def one_model(name: str, request: HTTPRequest):
        authorize(request.headers, api_key)
        if name != model_name:
            raise APIError(404, f"the model {name!r} does not exist; this server serves {model_name!r}",
                           param="model", code="model_not_found")
        return model_card(model_name, created, model.context_length)

    async def token_utility(request: HTTPRequest, read, *args):
        authorize(request.headers, api_key)
        check_content_type(request.headers.get("content-type"))
        raw = await request.body()
        return await asyncio.get_running_loop().run_in_executor(workers, read, raw, tokenizer, *args)

    @app.post("/tokenize")
    @app.post("/v1/tokenize")
    async def tokenize_prompt(request: HTTPRequest):
        return await token_utility(request, tokenize.tokenize, model.context_length)

    @app.post("/detokenize")
    @app.post("/v1/detokenize")
    async def detokenize_tokens(request: HTTPRequest):
        return await token_utility(request, tokenize.detokenize)

    @app.get("/metrics")
    async def metrics():
        return PlainTextResponse(scheduler.metrics.render(scheduler), media_type=METRICS_MEDIA_TYPE)

    @app.get("/health")
    async def health():
        state = {"status": "draining" if app.state.draining else "ok", "model": model_name,
                 "running": scheduler.running, "waiting": scheduler.waiting, "batches": scheduler.batches,
                 "cancelled": scheduler.cancelled,
                 "prompt_cache": {mode: kept.stats() for mode, kept in list(scheduler.prompt_caches.items())}}
        return JSONResponse(state, status_code=503 if app.state.draining else 200)

    return app

