"""The OpenAI wire protocol of `hamburger serve`, as pure functions: requests in, response shapes out.

In: a request body (bytes) -> `Parsed` (DecodingConfig, decoding mode, prompt token ids, streaming options),
and the `Authorization` header. Out: the OpenAI shapes the clients read: error bodies (`APIError`), `usage`,
the non-streamed completion body, the streamed chunks (`Chunks`) and their server-sent-event framing (`sse`),
the finish reasons, the model cards.

No web framework here: every function takes plain values and raises `APIError` (an OpenAI-shaped error with
its HTTP status) on anything it refuses, so the rules can be read, and tested, in one place. The routes
live in `app.py`; `prepare` runs off the event loop (tokenizing a long prompt takes CPU time).
"""

import hmac
import json
import math
import time
import uuid
from dataclasses import dataclass, field, replace
from itertools import accumulate

from hamburger.errors import HamburgerError
from hamburger.engine.generate import GenerationResult, GroupEvent, checked_request
from hamburger.engine.grammar import compile_schema
from hamburger.engine.prompt import Templating, encode_prompt
from hamburger.engine.sampling import MAX_BIAS, MAX_PENALTY, MAX_TOP_LOGPROBS, DecodingConfig
from hamburger.engine.verify import VerifyResult
from hamburger.serve.structured import LEGACY, StructuredError, parse_structured
from hamburger.serve.tools import CallStream, Conversation, Tools, ToolsError, parse_tools, renders_tools

ROLES = {"system", "developer", "user", "assistant", "tool"}
MESSAGE_FIELDS = {"role", "content", "name", "tool_calls", "tool_call_id"}
HONOURED = {"model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "stream", "stream_options",
            "n", "presence_penalty", "frequency_penalty", "logit_bias", "repetition_penalty", "confidence", "reread",
            "mode", "structured_outputs", "ignore_eos", "min_tokens", "min_p", "stop_token_ids",
            "allowed_token_ids", "include_stop_str_in_output", "truncate_prompt_tokens", "prompt_logprobs",
            "return_token_ids", "skip_special_tokens", "bad_words",
            *LEGACY}
# the request field `mode`: lossy merged decoding, lossless verify mode, or verify mode folding its cache
MODES = ("hamburger", "verify", "verify_fold")
IGNORED = {"user", "metadata", "store", "service_tier"}  # no effect on the output


def _off(*neutral):
    return lambda v: v is None or v in neutral


# Fields accepted only at their neutral value: anything else would change what the client expects.
VLLM_NEUTRAL = {"spaces_between_special_tokens": _off(True), "use_beam_search": _off(False)}  # (clients send defaults)
NEUTRAL = {
    "chat": {"functions": _off([]), "function_call": _off("none", "auto"), **VLLM_NEUTRAL},
    "completion": {"suffix": _off(""), "best_of": _off(1), **VLLM_NEUTRAL},
}
EXTRA = {"chat": {"messages", "max_completion_tokens", "logprobs", "top_logprobs", "response_format", "tools",
                  "tool_choice", "parallel_tool_calls", "prediction", "add_generation_prompt", "continue_final_message",
                  "chat_template_kwargs"},
         "completion": {"prompt", "logprobs", "echo"}}
MAX_LEGACY_LOGPROBS = 5  # the most alternatives per token the completions API's `logprobs` asks for
NO_PROBABILITY = -9999.0  # the log-probability written for a token of probability 0 (JSON has no -Infinity)
MAX_STOP = 4  # stop strings per request, as OpenAI allows
MAX_CHOICES = 16  # the most answers (`n`) one request asks for: each is a row of the server's batches
MAX_PROMPTS = 64  # the most prompts in one completions request, and prompts times `n` (its rows)
JSON_TYPES = ("application/json",)


class APIError(Exception):
    def __init__(self, status: int, message: str, type: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers

    def body(self) -> dict:
        return error_body(self.message, self.type, self.param, self.code)


def error_body(message: str, type: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict:
    """OpenAI's error shape: every refusal, and the error event that ends a failed stream."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def bad(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def shutting_down(message: str) -> APIError:
    """503: the server drains (SIGTERM) and takes no new requests."""
    return APIError(503, message, "server_error", code="shutting_down")


def internal_error(e: BaseException) -> APIError:
    """500: a fault no rule foresaw (logged where it is caught)."""
    return APIError(500, f"internal error: {type(e).__name__}: {e}", "server_error", code="internal_error")


def authorize(headers, api_key: str | None) -> None:
    """401 unless the request carries 'Authorization: Bearer KEY' (nothing is checked without a key).
    ``headers``: a mapping with lower-case names (Starlette's headers are case-insensitive)."""
    if api_key is None:
        return
    header = headers.get("authorization", "")
    given = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if not hmac.compare_digest(given.encode(), api_key.encode()):
        raise APIError(401, "Incorrect API key provided" if given else
                       "Missing API key: send 'Authorization: Bearer KEY'", code="invalid_api_key")


# ------------------------------------------------------------------------------------ the body
def check_content_type(value: str | None) -> None:
    """415 unless the body is declared JSON (no Content-Type at all is read as JSON)."""
    if value is None:
        return
    media = value.split(";", 1)[0].strip().lower()
    if media not in JSON_TYPES and not media.endswith("+json"):
        raise APIError(415, f"the request body must be JSON (Content-Type: application/json), got {value!r}",
                       code="unsupported_media_type")


def parse_body(raw: bytes) -> dict:
    """The JSON object of a request body: 400 for bad JSON, nesting too deep for the parser, or text that is
    not valid Unicode (a lone UTF-16 surrogate such as "\\ud83c" parses, but no tokenizer can encode it)."""
    try:
        body = json.loads(raw)
        json.dumps(body, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate anywhere
    except RecursionError as e:
        raise bad("the request body is nested too deeply", code="invalid_json") from e
    except UnicodeEncodeError as e:
        raise bad(f"the request body holds text that is not valid Unicode (a lone surrogate {e.object[e.start]!r})",
                  code="invalid_json") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise bad(f"the request body is not valid JSON: {e}", code="invalid_json") from e
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object", code="invalid_json")
    return body


# ------------------------------------------------------------------------------------ the fields
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


def parse_logprobs(body: dict, kind: str) -> int | None:
    """How many alternatives each token's log-probability comes with, or None: no log-probabilities asked. Chat:
    `logprobs` true, with `top_logprobs` alternatives (0-20; more than 0 only with `logprobs` true); completions:
    the integer `logprobs` (0-5)."""
    if kind != "chat":
        return _number(body, "logprobs", None, 0, MAX_LEGACY_LOGPROBS, integer=True)
    wanted = body.get("logprobs")
    if wanted is not None and not isinstance(wanted, bool):
        raise bad(f"'logprobs' must be a boolean, got {wanted!r}", "logprobs")
    top = _number(body, "top_logprobs", None, 0, MAX_TOP_LOGPROBS, integer=True)
    if top and not wanted:
        raise bad("'top_logprobs' needs 'logprobs' to be true", "top_logprobs", "invalid_value")
    return (top or 0) if wanted else None


def parse_logit_bias(body: dict, vocab: int) -> dict[int, float]:
    """`logit_bias`: an object from token ids (as strings, JSON's keys) to numbers in [-100, 100]."""
    bias = body.get("logit_bias")
    if bias is None:
        return {}
    if not isinstance(bias, dict):
        raise bad("'logit_bias' must be an object from token ids to numbers", "logit_bias")
    out = {}
    for key, value in bias.items():
        token = int(key) if isinstance(key, str) and key.isascii() and key.isdigit() else -1
        if not 0 <= token < vocab:
            raise bad(f"'logit_bias' keys must be token ids in [0, {vocab}), got {key!r}", "logit_bias",
                      "invalid_value")
        if value is None:
            raise bad(f"'logit_bias' values must be numbers, got None for {key!r}", "logit_bias")
        out[token] = float(_number({"logit_bias": value}, "logit_bias", None, -MAX_BIAS, MAX_BIAS))
    return out


def parse_token_ids(body: dict, name: str, vocab: int) -> list[int] | None:
    """vLLM's `stop_token_ids` (ids that end the answer as an end-of-sequence id does) or `allowed_token_ids` (the only
    ids the answer may hold; not empty): a list of token ids in [0, vocab), or None where the field is absent."""
    ids = body.get(name)
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab
                                            for t in ids):
        raise bad(f"'{name}' must be a list of token ids in [0, {vocab})", name)
    if not ids and name == "allowed_token_ids":
        raise bad("'allowed_token_ids' must hold at least one token id", name, "invalid_value")
    return list(ids)


def parse_response_format(body: dict) -> dict | None:
    """Chat's `response_format`: {"type": "text"} (None: free text), {"type": "json_object"} (any JSON object) or
    {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}} -> the JSON schema the answer is held to
    (400 for one that cannot hold an answer)."""
    fmt = body.get("response_format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        raise bad("'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                  "{\"type\": \"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": {...}}}",
                  "response_format", "invalid_value")
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        raise bad("'response_format.json_schema.schema' must be a JSON schema (an object)", "response_format",
                  "invalid_value")
    try:
        compile_schema(schema)
    except HamburgerError as e:
        raise bad(str(e), "response_format", "invalid_value") from e
    return schema


def parse_config(body: dict, kind: str, default_max_tokens: int, default_confidence: float | None
                 ) -> tuple[DecodingConfig, bool, bool, int | None]:
    """The DecodingConfig, `stream`, `include_usage` and `parse_logprobs` of a request body (400 on anything
    wrong)."""
    _check_fields(body, kind)
    if body.get("model") is not None and not isinstance(body["model"], str):
        raise bad("'model' must be a string", "model")
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = _number(body, key, default_max_tokens, 1, 1 << 30, integer=True)
    stop = body.get("stop")
    stop = [] if stop is None else [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise bad("'stop' must be a non-empty string or a list of non-empty strings", "stop")
    if len(stop) > MAX_STOP:
        raise bad(f"'stop' may hold at most {MAX_STOP} strings, got {len(stop)}", "stop", "invalid_value")
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
    logprobs = parse_logprobs(body, kind)
    for name in ("ignore_eos", "include_stop_str_in_output", "skip_special_tokens"):
        if body.get(name) is not None and not isinstance(body[name], bool):
            raise bad(f"'{name}' must be a boolean, got {body[name]!r}", name)
    try:
        schema, grammar = parse_structured(body)  # (vLLM's structured outputs)
    except StructuredError as e:
        raise bad(str(e), e.param, "invalid_value") from e
    answer_format = parse_response_format(body) if kind == "chat" else None
    if answer_format is not None and (schema is not None or grammar is not None):
        raise bad("'response_format' and structured outputs both hold the answer: send one", "response_format",
                  "invalid_value")
    bad_words = body.get("bad_words") or []
    if not isinstance(bad_words, list) or not all(isinstance(w, str) and w.strip() for w in bad_words):
        raise bad("'bad_words' must be a list of non-empty strings", "bad_words")
    config = DecodingConfig(
        max_new_tokens=max_tokens,
        confidence=_number(body, "confidence", default_confidence, 0.0, 1.0, lo_open=True),
        reread=float(_number(body, "reread", 0.0, 0.0, 1.0)),
        temperature=float(_number(body, "temperature", 0.0, 0.0, 2.0)),
        top_p=float(_number(body, "top_p", 1.0, 0.0, 1.0, lo_open=True)),
        top_k=_number(body, "top_k", 0, -1, 1 << 30, integer=True),  # (-1: vLLM's "off", as 0)
        min_p=float(_number(body, "min_p", 0.0, 0.0, 1.0)),
        seed=_number(body, "seed", None, -(1 << 63), (1 << 64) - 1, integer=True),
        stop=list(stop), include_stop_str_in_output=bool(body.get("include_stop_str_in_output")),
        skip_special_tokens=body.get("skip_special_tokens") is not False,
        top_logprobs=logprobs or 0, ignore_eos=bool(body.get("ignore_eos")),
        min_tokens=_number(body, "min_tokens", 0, 0, 1 << 30, integer=True), bad_words=bad_words,
        presence_penalty=float(_number(body, "presence_penalty", 0.0, -MAX_PENALTY, MAX_PENALTY)),
        frequency_penalty=float(_number(body, "frequency_penalty", 0.0, -MAX_PENALTY, MAX_PENALTY)),
        repetition_penalty=float(_number(body, "repetition_penalty", 1.0, 0.0, math.inf, lo_open=True)),
        json_schema=answer_format if answer_format is not None else schema, grammar=grammar)
    try:
        config.validate()
    except HamburgerError as e:
        raise bad(str(e)) from e
    return config, bool(stream), bool(options.get("include_usage", False)), logprobs


def _text_content(content, i: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" and
                                         isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise bad(f"messages[{i}].content must be a string or a list of text parts", f"messages[{i}].content")


def chat_prompt(body: dict, tokenizer, tools: Tools | None = None) -> list[int]:
    """The token ids of a chat request's `messages` (with the ``tools`` a call may name, `serve/tools.py`)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' must be a non-empty list", "messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise bad(f"messages[{i}] needs a role among {sorted(ROLES)}", f"messages[{i}].role")
        if set(m) - MESSAGE_FIELDS:
            raise bad(f"messages[{i}] has unsupported fields {sorted(set(m) - MESSAGE_FIELDS)}", f"messages[{i}]")
        role = "system" if m["role"] == "developer" else m["role"]
        calling = role == "assistant" and m.get("tool_calls") and m.get("content") is None
        out.append({**m, "role": role, "content": "" if calling else _text_content(m.get("content"), i)})
    try:
        conversation = Conversation.of(out, tools, tokenizer)
    except ToolsError as e:
        raise bad(str(e), e.param) from e
    templating = parse_templating(body)
    try:
        return encode_prompt(tokenizer, conversation.messages, tools=conversation.tools, templating=templating)
    except HamburgerError as e:
        raise bad(str(e), "messages") from e
    except Exception as e:  # the chat template itself may refuse a conversation
        raise bad(f"the chat template failed on these messages: {e}", "messages") from e


def parse_templating(body: dict) -> Templating:
    """vLLM's chat fields that choose how the chat template renders the messages: `add_generation_prompt`,
    `continue_final_message` (booleans) and `chat_template_kwargs` (an object)."""
    flags = {}
    for name in ("add_generation_prompt", "continue_final_message"):
        value = body.get(name)
        if value is not None and not isinstance(value, bool):
            raise bad(f"'{name}' must be a boolean, got {value!r}", name)
        flags[name] = value
    if flags["add_generation_prompt"] is None:  # (vLLM's default, unless the last message is to go on)
        flags["add_generation_prompt"] = not flags["continue_final_message"]
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise bad("'chat_template_kwargs' must be an object", "chat_template_kwargs")
    return Templating(flags["add_generation_prompt"], bool(flags["continue_final_message"]), kwargs or {})


def completion_prompts(body: dict, tokenizer) -> list[tuple[list[int], str]]:
    """A completions request's prompts (one, or a batch: a list of strings or of token-id lists, up to `MAX_PROMPTS`):
    each one's token ids, and its text (as given; decoded from ids given)."""
    prompt = body.get("prompt")
    batch = prompt if isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt) \
        else [prompt]
    if len(batch) > MAX_PROMPTS:
        raise bad(f"'prompt' may hold at most {MAX_PROMPTS} prompts, got {len(batch)}", "prompt", "invalid_value")
    return [_one_prompt(p, tokenizer) for p in batch]


def _one_prompt(prompt, tokenizer) -> tuple[list[int], str]:
    if isinstance(prompt, str):
        try:
            return encode_prompt(tokenizer, prompt, raw=True), prompt
        except HamburgerError as e:
            raise bad(str(e), "prompt") from e
    vocab = len(tokenizer)
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool)
                                                   and 0 <= t < vocab for t in prompt):
        return list(prompt), tokenizer.decode(prompt)
    raise bad("'prompt' must be a non-empty string, a list of token ids, or a list of either (a batch)", "prompt")


def parse_chat_tools(body: dict, config: DecodingConfig, tokenizer) -> Tools | None:
    """A chat request's `Tools` (None: it answers in text); 400 for malformed ones, or with a `response_format`. A
    model whose chat template does not render tools was not taught to call them, nor to stop after a few calls: it
    makes one call at most (`parallel_tool_calls` allows several; it does not ask for them)."""
    try:
        tools = parse_tools(body)
    except ToolsError as e:
        raise bad(str(e), e.param, "invalid_value") from e
    if tools is not None and not renders_tools(tokenizer):
        tools = replace(tools, parallel=False)
    if tools is not None and (config.json_schema is not None or config.grammar is not None):
        held_by = "response_format" if body.get("response_format") is not None else "structured_outputs"
        raise bad(f"'{held_by}' cannot hold an answer that may call 'tools' (send 'tool_choice': \"none\")", held_by,
                  "invalid_value")
    return tools


def parse_prediction(body: dict, tokenizer, mode: str) -> list[int] | None:
    """A chat request's `prediction` (OpenAI's predicted outputs: {"type": "content", "content": text or text parts})
    -> its token ids, which the verify modes draft from where the answer follows them (`engine/prediction.py`); a 400
    in "hamburger" mode, which drafts nothing."""
    given = body.get("prediction")
    if given is None:
        return None
    content = given.get("content") if isinstance(given, dict) else None
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" and
                                         isinstance(p.get("text"), str) for p in content):
        content = "".join(p["text"] for p in content)
    if not isinstance(given, dict) or given.get("type") != "content" or not isinstance(content, str):
        raise bad("'prediction' must be {\"type\": \"content\", \"content\": a string or a list of text parts}",
                  "prediction")
    if mode == "hamburger":
        raise bad("'prediction' drafts in the verify modes ('mode' \"verify\", the server's default, or "
                  "\"verify_fold\"); \"hamburger\" decodes merged groups and drafts nothing", "prediction",
                  "invalid_value")
    return tokenizer.encode(content, add_special_tokens=False) or None


def parse_mode(body: dict, default: str) -> str:
    """The decoding mode of a request: "hamburger" (merged groups, the knob), "verify" (lossless) or "verify_fold"
    (verify mode, older tokens folded into merged slots)."""
    mode = body.get("mode")
    if mode is None:
        return default
    if mode not in MODES:
        raise bad(f"'mode' must be one of {', '.join(MODES)}, got {mode!r}", "mode", "invalid_value")
    return mode


@dataclass(frozen=True)
class Echo:
    """A completions request's `echo`: its prompt as given (``text``) and as read (``ids``), which each answer's text
    and log-probabilities begin with."""

    text: str
    ids: list[int]


@dataclass
class Parsed:
    """What a request asks for: its generation config, decoding mode, the token ids of its prompts (one, or the
    completions API's batch), streaming options, ``logprobs``: the alternatives per token of its tokens'
    log-probabilities (None: none asked, `parse_logprobs`), ``n``: how many answers (choices) per prompt, and
    ``echo``: with completions' `echo`, each prompt as each of its answers begins with it; vLLM's ``prompt_logprobs``
    (None: not asked), the alternatives of each prompt token's log-probability, and ``token_ids``: whether the answer
    holds the token ids of its prompt and its answers (`with_vllm_fields`)."""

    config: DecodingConfig
    mode: str
    prompts: list[list[int]]
    stream: bool
    include_usage: bool
    logprobs: int | None = None
    n: int = 1
    echo: list[Echo] | None = None
    tools: Tools | None = None
    prompt_logprobs: int | None = None
    token_ids: bool = False

    def answers(self) -> tuple[list[list[int]], list[DecodingConfig]]:
        """Each answer's prompt and config, prompt by prompt (its `n` answers together: choice index = prompt's index
        * n + answer's): every prompt's answers are those a request with it alone gets (`choice_configs`)."""
        return [p for p in self.prompts for _ in range(self.n)], self.choice_configs() * len(self.prompts)

    def echoes(self) -> list[Echo] | None:
        """Each answer's `Echo` (None: no echo)."""
        return None if self.echo is None else [e for e in self.echo for _ in range(self.n)]

    def choice_configs(self) -> list[DecodingConfig]:
        """The config of each answer (`DecodingConfig.answers`: a seeded request's answers draw with successive
        seeds)."""
        return self.config.answers(self.n)


def prepare(raw: bytes, kind: str, tokenizer, default_max_tokens: int, default_confidence: float | None,
            default_mode: str = "hamburger") -> Parsed:
    """A request body -> `Parsed`; `kind` is "chat" or "completion"."""
    body = parse_body(raw)
    config, stream, include_usage, logprobs = parse_config(body, kind, default_max_tokens, default_confidence)
    config = replace(config, logit_bias=parse_logit_bias(body, len(tokenizer)),
                     stop_token_ids=parse_token_ids(body, "stop_token_ids", len(tokenizer)) or [],
                     allowed_token_ids=parse_token_ids(body, "allowed_token_ids", len(tokenizer)))
    n = _number(body, "n", 1, 1, MAX_CHOICES, integer=True)
    mode = parse_mode(body, default_mode)
    keep = _number(body, "truncate_prompt_tokens", None, 1, 1 << 30, integer=True)  # (vLLM's: the prompt's last k)
    scored = _number(body, "prompt_logprobs", None, 0, MAX_TOP_LOGPROBS, integer=True)
    if scored is not None:
        if stream:
            raise bad("'prompt_logprobs' is not available when streaming", "prompt_logprobs", "invalid_value")
        config = replace(config, prompt_logprobs=scored)
    token_ids = body.get("return_token_ids")
    if token_ids is not None and not isinstance(token_ids, bool):
        raise bad(f"'return_token_ids' must be a boolean, got {token_ids!r}", "return_token_ids")
    if kind == "chat":
        tools = parse_chat_tools(body, config, tokenizer)
        if tools is not None:
            config = replace(config, json_schema=tools.schema(), grammar=tools.grammar())
        config = checked(replace(config, prediction=parse_prediction(body, tokenizer, mode)))
        return Parsed(config, mode, [truncated(chat_prompt(body, tokenizer, tools), keep)], stream, include_usage,
                      logprobs, n, tools=tools, prompt_logprobs=scored, token_ids=bool(token_ids))
    config = checked(config)
    prompts = [(ids, text) if len(truncated(ids, keep)) == len(ids) else (ids[-keep:], tokenizer.decode(ids[-keep:]))
               for ids, text in completion_prompts(body, tokenizer)]  # (an echo shows what the model read)
    if len(prompts) * n > MAX_PROMPTS:
        raise bad(f"{len(prompts)} prompts times 'n' {n} make more than {MAX_PROMPTS} answers", "n", "invalid_value")
    echo = body.get("echo")
    if echo is not None and not isinstance(echo, bool):
        raise bad(f"'echo' must be a boolean, got {echo!r}", "echo")
    if echo and logprobs is not None:  # the prompt's log-probabilities too, from the prefill's reading of it
        config = replace(config, prompt_logprobs=max(logprobs, scored or 0))
    return Parsed(config, mode, [ids for ids, _ in prompts], stream, include_usage, logprobs, n,
                  [Echo(text, ids) for ids, text in prompts] if echo else None, prompt_logprobs=scored,
                  token_ids=bool(token_ids))


def truncated(ids: list[int], keep: int | None) -> list[int]:
    """vLLM's `truncate_prompt_tokens`: a prompt's last ``keep`` tokens (None: all of them)."""
    return ids if keep is None else ids[-keep:]


def checked(config: DecodingConfig) -> DecodingConfig:
    """``config`` validated again once the fields read apart from `parse_config` (token ids, a chat's tools) are in it:
    settings that cannot go together are a 400 (`min_tokens` or `allowed_token_ids` beside a tool's schema)."""
    try:
        return config.validate()
    except HamburgerError as e:
        raise bad(str(e), code="invalid_value") from e


def engine_checked(config: DecodingConfig, eos, vocab: int, tokenizer) -> None:
    """A 400 for settings the engine would refuse (`generate.checked_request`: ids outside the vocabulary, and
    `min_tokens`, `allowed_token_ids` and `bad_words` that leave no token), before a streamed answer's headers go (the
    scheduler's refusal could only be told in the stream). ``config``: a request's (its answers' differ only in
    seed)."""
    try:
        checked_request(config, eos, vocab, tokenizer)
    except HamburgerError as e:
        raise bad(str(e), code="invalid_value") from e


# ------------------------------------------------------------------------------------ responses
# "cancelled": a row cut when the drain time ran out (a client that went away is never answered)
FINISH = {"eos": "stop", "stop": "stop", "length": "length", "cancelled": "length"}
SSE_MEDIA_TYPE = "text/event-stream"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy may hold the events back


def finish_reason(result: GenerationResult, calls: bool = False) -> str:
    """OpenAI's finish reason of a result; ``calls``: its message holds tool calls."""
    reason = FINISH[result.finish_reason]
    return "tool_calls" if calls and reason == "stop" else reason


def usage(results: GenerationResult | list[GenerationResult], n: int = 1) -> dict:
    """OpenAI's token counts, plus `hamburger`: what the decoding cost (forwards, groups, KV slots). Several answers
    to one request (`n` per prompt, prompt by prompt): each prompt once, the rest summed over them (each answer's row
    held its own copy of its prompt's KV), tau their tokens per forward. ``prompt_tokens_details.cached_tokens``: the
    prompt tokens a prompt cache gave (OpenAI's field), each prompt's first answer's.
    ``completion_tokens_details``' prediction tokens: drafts from the request's `prediction` the base kept, and those it
    did not (OpenAI counts the prediction's tokens that did and did not appear in the answer)."""
    rs = results if isinstance(results, list) else [results]
    tokens, forwards = sum(r.tokens for r in rs), sum(r.forwards for r in rs)
    first, prompt = rs[0], sum(r.prompt_tokens for r in rs[::n])
    cached = sum(r.cached_tokens for r in rs[::n])
    predicted = [(getattr(r, "accepted_prediction_tokens", 0), getattr(r, "rejected_prediction_tokens", 0)) for r in rs]
    return {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": 0,
                                          "accepted_prediction_tokens": sum(a for a, _ in predicted),
                                          "rejected_prediction_tokens": sum(r for _, r in predicted)},
            "hamburger": {"base_forwards": forwards, "tau": round(tokens / forwards if len(rs) > 1 else first.tau, 4),
                          "groups": sum(len(r.groups) for r in rs), "kv_slots": sum(r.kv_slots for r in rs),
                          "kv_slots_ordinary": sum(r.kv_slots_ordinary for r in rs),
                          "kv_bytes": sum(r.kv_bytes for r in rs), "rereads": sum(r.rereads for r in rs),
                          "confidence": first.confidence, "mode": mode_of(first)}}


def mode_of(r: GenerationResult) -> str:
    """The `MODES` entry a result was decoded in."""
    if isinstance(r, VerifyResult):
        return "verify_fold" if r.folded else "verify"
    return "hamburger"


def sse(data) -> str:
    """One server-sent event: a JSON payload, or a bare string such as "[DONE]"."""
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def completion_id(kind: str) -> str:
    return f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class TokenLogprobs:
    """The log-probabilities of a request's tokens in the shape its API reads: for ``kind`` "chat" `logprobs.content`,
    one entry per token with its ``top`` most likely alternatives; else the completions API's object (tokens,
    token_logprobs, top_logprobs: the alternatives and the chosen token, text_offset). A token's text is the
    tokenizer's decoding of it alone; its log-probability is under the distribution it was chosen from, before
    temperature, top-k and top-p (`GenerationResult.token_probs` and `alternatives`: the base's, or the micro-step
    decoder's for a merged group's later tokens)."""

    kind: str
    tokenizer: object
    top: int
    skip_special_tokens: bool = True  # as the answer's text leaves them out (`DecodingConfig.skip_special_tokens`)

    def token_text(self, token: int) -> str:
        """A token's text: the tokenizer's decoding of it alone."""
        return self.tokenizer.decode([token], skip_special_tokens=False)

    def render(self, ids: list[int], probs: list[float], alternatives: list, offset: int = 0) -> dict:
        """The object for the tokens ``ids`` (their probabilities ``probs``, their `alternatives`); ``offset``: the
        characters of the answer before them (the completions API's `text_offset`)."""
        return self._render(ids, [math.log(p) if p > 0 else -math.inf for p in probs], alternatives, offset)

    def _render(self, ids: list[int], logprobs: list[float], alternatives: list, offset: int = 0) -> dict:
        """`render` from log-probabilities."""
        texts = [self.token_text(t) for t in ids]
        logprobs = [_logprob(lp) for lp in logprobs]
        tops = [[(self.token_text(t), _logprob(lp)) for t, lp in a[:self.top]] for a in alternatives] if self.top else \
            [[] for _ in ids]
        if self.kind == "chat":
            return {"content": [{**_token_entry(text, lp), "top_logprobs": [_token_entry(*alt) for alt in top]}
                                for text, lp, top in zip(texts, logprobs, tops)], "refusal": None}
        chosen = []
        for text, lp, top in zip(texts, logprobs, tops):
            chosen.append(dict(top))
            chosen[-1].setdefault(text, lp)
        offsets = list(accumulate(map(len, texts), initial=offset))[:-1]
        return {"tokens": texts, "token_logprobs": logprobs, "top_logprobs": chosen, "text_offset": offsets}

    def of_result(self, result: GenerationResult, prompt_ids: list[int] | None = None) -> dict:
        """The object for a whole answer: its tokens, but none after the one where a stop string cut its text. With
        ``prompt_ids`` (the completions API's `echo`) the prompt's tokens come first, with their log-probabilities
        (`GenerationResult.prompt_logprobs`; the first token's is null, as its alternatives)."""
        n = self.shown_tokens(result.token_ids, len(result.text), result.finish_reason)
        if prompt_ids is None:
            return self.render(result.token_ids[:n], result.token_probs[:n], result.alternatives[:n])
        answer = self.render(result.token_ids[:n], result.token_probs[:n], result.alternatives[:n],
                             self.text_length(prompt_ids))
        return joined(self.of_prompt(prompt_ids, result.prompt_logprobs, result.prompt_alternatives), answer)

    def of_prompt(self, ids: list[int], logprobs: list[float], alternatives: list) -> dict:
        """The completions API's object for an echoed prompt's tokens ``ids``: the first without a log-probability
        (null, as its alternatives), each other's under the model's reading of the prompt (``logprobs``)."""
        rest = self._render(ids[1:], logprobs, alternatives, len(self.token_text(ids[0])))
        return joined({"tokens": [self.token_text(ids[0])], "token_logprobs": [None], "top_logprobs": [None],
                       "text_offset": [0]}, rest)

    def text_length(self, ids: list[int]) -> int:
        """The characters of the tokens' texts, each decoded alone (where the next token's `text_offset` lies)."""
        return sum(len(self.token_text(t)) for t in ids)

    def shown_tokens(self, ids: list[int], chars: int, finish: str | None, start: int = 0) -> int:
        """How many of an answer's tokens ``ids`` its first ``chars`` characters show: while it goes on (``finish``
        None), the tokens whose text they hold whole; once it ended, all of them, or when a stop string cut its text to
        ``chars``, those up to the one that reaches the cut. ``start``: so many are known to be shown."""
        if finish is not None and finish != "stop":
            return len(ids)
        def length(k: int) -> int:
            return len(self.tokenizer.decode(ids[:k], skip_special_tokens=self.skip_special_tokens))
        k = start
        if finish == "stop":
            while k < len(ids) and length(k) < chars:
                k += 1
            return k
        while k < len(ids) and length(k + 1) <= chars:
            k += 1
        return k


def joined(first: dict, second: dict) -> dict:
    """Two of the completions API's log-probability objects, one after the other."""
    return {key: first[key] + second[key] for key in first}


def _logprob(value: float) -> float:
    return value if math.isfinite(value) else NO_PROBABILITY


def _token_entry(text: str, logprob: float) -> dict:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}


def completion_body(kind: str, rid: str, model: str, results: GenerationResult | list[GenerationResult],
                    logprobs: TokenLogprobs | None = None, echoes: list[Echo] | None = None, n: int = 1,
                    tools: Tools | None = None) -> dict:
    """The answer to a non-streamed request: a chat.completion or a text_completion, one choice per result (with its
    tokens' ``logprobs`` where the request asked for them; with ``echoes``, one per result, its prompt's first), ``n``
    results per prompt; with ``tools``, a chat message's calls read from its text (`Tools.calls`)."""
    rs = results if isinstance(results, list) else [results]
    choices = []
    for index, result in enumerate(rs):
        echo = echoes[index] if echoes else None
        rendered = None if logprobs is None else logprobs.of_result(result, echo and echo.ids)
        if kind == "chat":
            message, calls = {"role": "assistant", "content": result.text}, []
            if tools is not None:
                message["content"], calls = tools.calls(result.text)
                message.update({"tool_calls": calls} if calls else {})
            choices.append({"index": index, "message": message, "logprobs": rendered,
                            "finish_reason": finish_reason(result, bool(calls)), "stop_reason": result.stop_reason})
        else:
            choices.append({"index": index, "text": (echo.text if echo else "") + result.text, "logprobs": rendered,
                            "finish_reason": finish_reason(result), "stop_reason": result.stop_reason})
    return {"id": rid, "object": "chat.completion" if kind == "chat" else "text_completion",
            "created": int(time.time()), "model": model, "choices": choices, "usage": usage(rs, n)}


def with_vllm_fields(body: dict, parsed: Parsed, results: list[GenerationResult], tokenizer) -> dict:
    """A non-streamed answer ``body`` with the vLLM fields ``parsed`` asked for. `return_token_ids`: each choice's
    ``token_ids`` (every token it generated) and the ``prompt_token_ids`` it read. `prompt_logprobs`: each prompt
    token's entry, null for the first, else an object from token ids to {"logprob", "rank", "decoded_token"}: the token
    itself, then its ``parsed.prompt_logprobs`` most likely alternatives (ranks 1, 2, ...), each under the model's
    reading of the prompt. A completions choice has its prompt's; a chat answer has them beside its choices."""
    k = parsed.prompt_logprobs

    def entry(token: int, logprob: float, rank: int) -> tuple[str, dict]:
        text = tokenizer.decode([token], skip_special_tokens=False)
        return str(token), {"logprob": _logprob(logprob), "rank": rank, "decoded_token": text}

    def scored(prompt: list[int], result: GenerationResult) -> list[dict | None]:
        out: list[dict | None] = [None]
        for token, logprob, rank, top in zip(prompt[1:], result.prompt_logprobs, result.prompt_ranks,
                                             result.prompt_alternatives):
            out.append(dict([entry(token, logprob, rank)]))
            for i, (alt, lp) in enumerate(top[:k]):
                out[-1].setdefault(*entry(alt, lp, i + 1))
        return out

    def of_prompt(prompt: list[int], result: GenerationResult) -> dict:
        return {**({"prompt_token_ids": prompt} if parsed.token_ids else {}),
                **({"prompt_logprobs": scored(prompt, result)} if k is not None else {})}
    if k is None and not parsed.token_ids:
        return body
    prompts = parsed.answers()[0]
    choices = [{**c, **({"token_ids": r.token_ids} if parsed.token_ids else {})}
               for c, r in zip(body["choices"], results)]
    if body["object"] == "chat.completion":
        return {**body, "choices": choices, **of_prompt(prompts[0], results[0])}
    return {**body, "choices": [{**c, **of_prompt(p, r)} for c, p, r in zip(choices, prompts, results)]}


@dataclass(frozen=True)
class Chunks:
    """The chunks of one streamed request (``kind`` "chat": chat.completion.chunk, else text_completion), in
    order for each answer (choice ``index``): `role` (chat only), one `group` chunk per group of tokens, its `finish`;
    then `close`: with ``include_usage`` every chunk has "usage": null and a usage chunk with no choices comes last, as
    OpenAI streams it; then "[DONE]". (Several answers' chunks interleave as their groups come.) An answer's own
    chunks, and with ``logprobs`` its tokens' log-probabilities, come from its `StreamedAnswer`."""

    kind: str
    rid: str
    model: str
    include_usage: bool = False
    logprobs: TokenLogprobs | None = None
    n: int = 1  # answers per prompt (`usage`)
    tools: Tools | None = None  # a chat answer's text may be calls (`CallStream`)
    token_ids: bool = False  # vLLM's `return_token_ids`: each chunk's new tokens, an answer's first its prompt's

    @property
    def object(self) -> str:
        return "chat.completion.chunk" if self.kind == "chat" else "text_completion"

    def _chunk(self, choices: list) -> dict:
        return {"id": self.rid, "object": self.object, "created": int(time.time()), "model": self.model,
                "choices": choices}

    def text(self, text: str | None, finish: str | None = None, logprobs: dict | None = None, index: int = 0,
             delta: dict | None = None, stop_reason: str | int | None = None) -> dict:
        """A chunk of generated text (None: no text, as in a final chunk with nothing left to show); a chat chunk's
        ``delta`` in place of its text's (tool calls). A final chunk (``finish``) carries vLLM's ``stop_reason``."""
        if self.kind == "chat":
            delta = delta if delta is not None else {} if text is None else {"content": text}
            choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        else:
            choice = {"index": index, "text": text or "", "logprobs": logprobs, "finish_reason": finish}
        if finish is not None:
            choice["stop_reason"] = stop_reason
        out = self._chunk([choice])
        if self.include_usage:
            out["usage"] = None
        return out

    def role(self, index: int = 0) -> dict:
        """The first chunk of an answer in a chat stream: the assistant's role and no text yet."""
        out = self.text("", index=index)
        out["choices"][0]["delta"] = {"role": "assistant", "content": ""}
        return out

    def close(self, results: list[GenerationResult]) -> list:
        """What ends the stream once every answer is in: the usage chunk (if asked), then "[DONE]"."""
        return [*([{**self._chunk([]), "usage": usage(results, self.n)}] if self.include_usage else []), "[DONE]"]


@dataclass
class StreamedAnswer:
    """One answer of a streamed request (choice ``index``) as its chunks go out: the characters sent, and with
    log-probabilities its tokens so far and how many of them were sent. A token's log-probability goes with the chunk
    that shows the whole of its text: text held back (a possible stop string) holds its tokens back too, and a stop
    string's cut ends them, so the chunks carry exactly the tokens the answer's `TokenLogprobs.of_result` holds. With
    ``echo`` the first chunk begins with the prompt, and its log-probabilities with the prompt's."""

    chunks: Chunks
    index: int = 0
    echo: Echo | None = None
    shown: int = 0  # characters of the answer sent
    ids: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    alternatives: list = field(default_factory=list)
    sent: int = 0  # tokens whose log-probabilities were sent
    offset: int = 0  # their texts' characters (the completions API's `text_offset` of the next one)
    sent_prompt: bool = False  # the echoed prompt went out
    calls: CallStream | None = None  # with tools: the text as content and calls
    prompt_ids: list[int] | None = None  # with `Chunks.token_ids`: the prompt's, which its first group's chunk holds

    def __post_init__(self):
        if self.chunks.tools is not None:
            self.calls = CallStream(self.chunks.tools)
        if self.echo is not None and self.chunks.logprobs is not None:  # (the answer's offsets follow the prompt's)
            self.offset = self.chunks.logprobs.text_length(self.echo.ids)

    def group(self, event: GroupEvent) -> dict:
        """The chunk of one group of tokens: its text, and the log-probabilities of the tokens it shows."""
        self.ids += event.token_ids
        self.probs += event.token_probs
        self.alternatives += event.alternatives
        self.shown += len(event.text)
        logprobs, text = self._logprobs(event.finish_reason), event.text
        if self.echo is not None and not self.sent_prompt:  # (the first group comes with the prompt's reading)
            text, self.sent_prompt = self.echo.text + text, True
            lp = self.chunks.logprobs
            if lp is not None:
                prompt = lp.of_prompt(self.echo.ids, event.prompt_logprobs, event.prompt_alternatives)
                logprobs = prompt if logprobs is None else joined(prompt, logprobs)
        delta = None if self.calls is None else self.calls.delta(text)
        return self._with_ids(self.chunks.text(text, logprobs=logprobs, index=self.index, delta=delta),
                              event.token_ids)

    def _with_ids(self, chunk: dict, ids: list[int]) -> dict:
        """With `Chunks.token_ids`, ``chunk`` with its new token ids ``ids``, and the prompt's in the answer's first
        (vLLM's: a chat chunk holds them beside its choices, a completions chunk in its choice)."""
        if self.chunks.token_ids:
            chunk["choices"][0]["token_ids"] = ids
            if self.prompt_ids is not None:
                (chunk if self.chunks.kind == "chat" else chunk["choices"][0])["prompt_token_ids"] = self.prompt_ids
                self.prompt_ids = None
        return chunk

    def finish(self, result: GenerationResult) -> dict:
        """The final chunk once ``result`` is in: the text held back (a possible stop string, when a row is cut), its
        tokens' log-probabilities, and the finish reason."""
        text, self.shown = result.text[self.shown:] or None, len(result.text)
        logprobs = self._logprobs(result.finish_reason)
        if self.calls is None:
            chunk = self.chunks.text(text, finish_reason(result), logprobs, self.index, stop_reason=result.stop_reason)
        else:
            delta = self.calls.close(text or "")  # (what it has called is known once it is closed)
            chunk = self.chunks.text(None, finish_reason(result, self.calls.called), logprobs, self.index, delta,
                                     result.stop_reason)
        return self._with_ids(chunk, [])

    def _logprobs(self, finish: str | None) -> dict | None:
        """The log-probabilities of the tokens shown and not sent yet (None: none asked, or none to send)."""
        lp = self.chunks.logprobs
        if lp is None:
            return None
        n = max(self.sent, lp.shown_tokens(self.ids, self.shown, finish, self.sent))
        if n == self.sent:
            return None
        rendered = lp.render(self.ids[self.sent:n], self.probs[self.sent:n], self.alternatives[self.sent:n],
                             self.offset)
        self.offset += sum(len(lp.token_text(t)) for t in self.ids[self.sent:n])
        self.sent = n
        return rendered


def model_card(name: str, created: int, max_model_len: int) -> dict:
    """OpenAI's model object, with vLLM's `max_model_len` (the context in tokens: prompt and answer together)."""
    return {"id": name, "object": "model", "created": created, "owned_by": "hamburger", "max_model_len": max_model_len}


def model_list(name: str, created: int, max_model_len: int) -> dict:
    return {"object": "list", "data": [model_card(name, created, max_model_len)]}
