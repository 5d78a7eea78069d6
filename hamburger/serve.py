"""`hamburger serve`: an OpenAI-compatible HTTP server (FastAPI + uvicorn) over a HAMburger checkpoint.

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health. Requests are
batched by `scheduler.Scheduler` (continuous batching). Every error is an OpenAI-shaped body
{"error": {"message", "type", "param", "code"}}. Any model name is accepted in requests (one model is
served); responses name the served model. Extensions: the request field `confidence` (and `top_k`),
and `usage.hamburger` (base_forwards, tau, groups, kv_slots, kv_slots_ordinary, kv_bytes, confidence).
"""


import asyncio
import hmac
import json
import math
import os
import sys
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

from .errors import HamburgerError
from .generate import GenerationResult, encode_prompt
from .sampling import GenerationConfig
from .scheduler import QueueFull, Request, Scheduler, ShuttingDown

FINISH = {"eos": "stop", "stop": "stop", "length": "length"}
ROLES = {"system", "developer", "user", "assistant"}
HONOURED = {"model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "stream", "stream_options",
            "n", "confidence"}
IGNORED = {"user", "metadata", "store", "service_tier", "parallel_tool_calls"}  # no effect on the output


def _off(*neutral):
    return lambda v: v is None or v in neutral


# Fields accepted only at their neutral value: anything else would change what the client expects.
NEUTRAL = {
    "chat": {"logprobs": _off(False), "top_logprobs": _off(0), "presence_penalty": _off(0),
             "frequency_penalty": _off(0), "logit_bias": _off({}), "tools": _off([]), "functions": _off([]),
             "tool_choice": _off("none", "auto"), "function_call": _off("none", "auto"),
             "response_format": _off({"type": "text"})},
    "completion": {"logprobs": _off(0), "presence_penalty": _off(0), "frequency_penalty": _off(0),
                   "logit_bias": _off({}), "echo": _off(False), "suffix": _off(""), "best_of": _off(1)},
}
EXTRA = {"chat": {"messages", "max_completion_tokens"}, "completion": {"prompt"}}


class APIError(Exception):
    def __init__(self, status: int, message: str, type: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


# ------------------------------------------------------------------------------------ request parsing
def _number(body: dict, key: str, default, lo: float, hi: float, lo_open: bool = False, integer: bool = False):
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)) or not math.isfinite(value):
        raise bad(f"'{key}' must be {'an integer' if integer else 'a number'}, got {value!r}", key)
    if value < lo or (lo_open and value == lo) or value > hi:
        span = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
        raise bad(f"'{key}' must be in {span}, got {value!r}", key, "invalid_value")
    return value


def _check_fields(body: dict, kind: str) -> None:
    for key, value in body.items():
        if key in HONOURED or key in IGNORED or key in EXTRA[kind]:
            continue
        if key in NEUTRAL[kind]:
            if not NEUTRAL[kind][key](value):
                raise bad(f"'{key}' is not supported by this server (got {value!r})", key, "unsupported_parameter")
            continue
        raise bad(f"unrecognized request argument supplied: {key}", key, "unsupported_parameter")


def parse_config(body: dict, kind: str, default_max_tokens: int, default_confidence: float | None
                 ) -> tuple[GenerationConfig, bool, bool]:
    """The GenerationConfig, `stream` and `include_usage` of a request body (400 on anything wrong)."""
    _check_fields(body, kind)
    if body.get("model") is not None and not isinstance(body["model"], str):
        raise bad("'model' must be a string", "model")
    if _number(body, "n", 1, 1, 1 << 30, integer=True) != 1:
        raise bad("only n=1 is supported", "n", "unsupported_value")
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = _number(body, key, default_max_tokens, 1, 1 << 30, integer=True)
    stop = body.get("stop")
    stop = [] if stop is None else [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise bad("'stop' must be a non-empty string or a list of non-empty strings", "stop")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise bad("'stream' must be a boolean", "stream")
    options = body.get("stream_options")
    if options is not None and not stream:
        raise bad("'stream_options' is only allowed when 'stream' is true", "stream_options")
    options = options or {}
    if not isinstance(options, dict) or set(options) - {"include_usage", "include_obfuscation"} or \
            not isinstance(options.get("include_usage", False), bool):
        raise bad("'stream_options' may only hold the boolean 'include_usage'", "stream_options")
    config = GenerationConfig(
        max_new_tokens=max_tokens,
        confidence=_number(body, "confidence", default_confidence, 0.0, 1.0, lo_open=True),
        temperature=float(_number(body, "temperature", 0.0, 0.0, 2.0)),
        top_p=float(_number(body, "top_p", 1.0, 0.0, 1.0, lo_open=True)),
        top_k=_number(body, "top_k", 0, 0, 1 << 30, integer=True),
        seed=_number(body, "seed", None, -(1 << 63), (1 << 64) - 1, integer=True),
        stop=list(stop))
    try:
        config.validate()
    except HamburgerError as e:
        raise bad(str(e)) from e
    return config, bool(stream), bool(options.get("include_usage", False))


def _text_content(content, i: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" and
                                         isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise bad(f"messages[{i}].content must be a string or a list of text parts", f"messages[{i}].content")


def chat_prompt(body: dict, tokenizer) -> list[int]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' must be a non-empty list", "messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise bad(f"messages[{i}] needs a role among {sorted(ROLES)} (tools are not supported)",
                      f"messages[{i}].role")
        if set(m) - {"role", "content", "name"}:
            raise bad(f"messages[{i}] has unsupported fields {sorted(set(m) - {'role', 'content', 'name'})}",
                      f"messages[{i}]")
        role = "system" if m["role"] == "developer" else m["role"]
        out.append({"role": role, "content": _text_content(m.get("content"), i)})
    try:
        return encode_prompt(tokenizer, out)
    except HamburgerError as e:
        raise bad(str(e), "messages") from e
    except Exception as e:  # the chat template itself may refuse a conversation
        raise bad(f"the chat template failed on these messages: {e}", "messages") from e


def completion_prompt(body: dict, tokenizer) -> list[int]:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        try:
            return encode_prompt(tokenizer, prompt, raw=True)
        except HamburgerError as e:
            raise bad(str(e), "prompt") from e
    vocab = len(tokenizer)
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool)
                                                   and 0 <= t < vocab for t in prompt):
        return list(prompt)
    raise bad("'prompt' must be one non-empty string or one list of token ids (several prompts are not "
              "supported: send one request per prompt)", "prompt")


# ------------------------------------------------------------------------------------ responses
def usage(r: GenerationResult) -> dict:
    return {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.tokens,
            "total_tokens": r.prompt_tokens + r.tokens,
            "hamburger": {"base_forwards": r.forwards, "tau": round(r.tau, 4), "groups": len(r.groups),
                          "kv_slots": r.kv_slots, "kv_slots_ordinary": r.kv_slots_ordinary, "kv_bytes": r.kv_bytes,
                          "confidence": r.confidence}}


def sse(data) -> str:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def create_app(model, tokenizer, model_name: str = "hamburger", api_key: str | None = None,
               max_batch_size: int = 8, max_queue: int = 64, confidence: float | None = None,
               default_max_tokens: int = 512):
    """The FastAPI app; its scheduler thread starts and stops with the app's lifespan."""
    from fastapi import FastAPI, Request as HTTPRequest  # (no `from __future__ import annotations` here:
    # FastAPI reads the handlers' annotations, and HTTPRequest is local)
    from fastapi.responses import JSONResponse, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    scheduler = Scheduler(model, tokenizer, max_batch_size, max_queue)
    created = int(time.time())

    @asynccontextmanager
    async def lifespan(app):
        scheduler.start()
        yield
        scheduler.stop()

    app = FastAPI(title="hamburger", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.scheduler = scheduler

    @app.exception_handler(APIError)
    async def api_error(request, exc: APIError):
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, exc):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        return JSONResponse(APIError(exc.status_code, str(exc.detail), code=code).body(), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def server_error(request, exc):
        return JSONResponse(APIError(500, f"internal error: {exc}", "server_error").body(), status_code=500)

    def authorize(request: HTTPRequest) -> None:
        if api_key is None:
            return
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header[:7].lower() == "bearer " else ""
        if not hmac.compare_digest(given.encode(), api_key.encode()):
            raise APIError(401, "Incorrect API key provided" if given else
                           "Missing API key: send 'Authorization: Bearer KEY'", code="invalid_api_key")

    async def read_body(request: HTTPRequest) -> dict:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise bad(f"the request body is not valid JSON: {e}", code="invalid_json") from e
        if not isinstance(body, dict):
            raise bad("the request body must be a JSON object", code="invalid_json")
        return body

    def submit(ids: list[int], config: GenerationConfig) -> Request:
        if len(ids) >= model.context_length:
            raise bad(f"this model's maximum context length is {model.context_length} tokens; the prompt has "
                      f"{len(ids)} tokens, leaving no room to generate", code="context_length_exceeded")
        req = Request(ids, config, asyncio.get_running_loop())
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
        if result.finish_reason == "cancelled":
            raise failure(ShuttingDown("the server is shutting down"))
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
            done = False
            try:
                if kind == "chat":
                    yield sse(chunk(None, None, role=True))
                while True:
                    what, value = await req.queue.get()
                    if what == "event":
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
                    yield sse(chunk(None if kind == "chat" else "", reason))
                    if include_usage:
                        yield sse({"id": rid, "object": obj, "created": int(time.time()), "model": model_name,
                                   "choices": [], "usage": usage(value)})
                    yield sse("[DONE]")
                    return
            finally:
                if not done:  # the client went away: free its row
                    scheduler.cancel(req)

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def handle(request: HTTPRequest, kind: str):
        authorize(request)
        body = await read_body(request)
        config, stream, include_usage = parse_config(body, kind, default_max_tokens, confidence)
        ids = chat_prompt(body, tokenizer) if kind == "chat" else completion_prompt(body, tokenizer)
        req = submit(ids, config)
        rid = f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex}"
        if stream:
            return streamer(req, kind, rid, include_usage)
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
        return {"status": "ok", "model": model_name, "running": scheduler.running, "waiting": scheduler.waiting,
                "batches": scheduler.batches, "cancelled": scheduler.cancelled}

    return app


# ------------------------------------------------------------------------------------ CLI
def cmd_serve(args) -> int:
    import uvicorn

    from .cli import load_model, set_threads

    if args.confidence is not None and not 0.0 < args.confidence <= 1.0:
        raise HamburgerError(f"--confidence must be in (0, 1], got {args.confidence}")
    for name in ("max_batch_size", "max_queue", "max_tokens"):
        if getattr(args, name) < 1:
            raise HamburgerError(f"--{name.replace('_', '-')} must be >= 1")
    api_key = args.api_key or os.environ.get("HAMBURGER_API_KEY") or None
    set_threads(args.threads)
    model, tokenizer, _ = load_model(args.model, args.dtype, args.base)
    name = args.served_model_name or Path(args.model or "hamburger").resolve().name
    app = create_app(model, tokenizer, name, api_key, args.max_batch_size, args.max_queue, args.confidence,
                     args.max_tokens)
    if api_key is None and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"hamburger serve: warning: listening on {args.host} without --api-key", file=sys.stderr)
    print(f"hamburger serve: {name} on http://{args.host}:{args.port}/v1 (batches of up to {args.max_batch_size}, "
          f"queue {args.max_queue})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=5)
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
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="compute dtype")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn log level (default info)")
    p.set_defaults(func=cmd_serve)
