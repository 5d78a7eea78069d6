"""Pure request parsing for `hamburger serve`: a request body (bytes) -> GenerationConfig and prompt token ids.

No web framework here: every function takes plain values and raises `APIError` (an OpenAI-shaped error with
its HTTP status) on anything it refuses, so the rules can be read, and tested, in one place. The routes
live in `serve.py`; these functions run off the event loop (tokenizing a long prompt takes CPU time).
"""

import json
import math
from dataclasses import dataclass

from hamburger.errors import HamburgerError
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import GenerationConfig

ROLES = {"system", "developer", "user", "assistant"}
HONOURED = {"model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "stream", "stream_options",
            "n", "confidence", "mode"}
MODES = ("hamburger", "verify")  # the request field `mode`: lossy merged decoding, or lossless verify mode
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
MAX_STOP = 4  # stop strings per request, as OpenAI allows
JSON_TYPES = ("application/json",)


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


def parse_mode(body: dict, default: str) -> str:
    """The decoding mode of a request: "hamburger" (merged groups, the knob) or "verify" (lossless)."""
    mode = body.get("mode")
    if mode is None:
        return default
    if mode not in MODES:
        raise bad(f"'mode' must be one of {', '.join(MODES)}, got {mode!r}", "mode", "invalid_value")
    return mode


@dataclass
class Parsed:
    """What a request asks for: its generation config, decoding mode, prompt ids and streaming options."""

    config: GenerationConfig
    mode: str
    prompt_ids: list[int]
    stream: bool
    include_usage: bool


def prepare(raw: bytes, kind: str, tokenizer, default_max_tokens: int, default_confidence: float | None,
            default_mode: str = "hamburger") -> Parsed:
    """A request body -> `Parsed`; `kind` is "chat" or "completion"."""
    body = parse_body(raw)
    config, stream, include_usage = parse_config(body, kind, default_max_tokens, default_confidence)
    mode = parse_mode(body, default_mode)
    ids = chat_prompt(body, tokenizer) if kind == "chat" else completion_prompt(body, tokenizer)
    return Parsed(config, mode, ids, stream, include_usage)
