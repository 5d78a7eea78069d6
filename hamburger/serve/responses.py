"""OpenAI's Responses API (`POST /v1/responses`: the official clients' `responses.create`, and the agent SDKs built on
it), answered on the chat completions path: a request becomes a chat request (`to_chat`), which is answered as one,
and its answer is written back as a response object (`response_body`) or as the Responses stream's typed events
(`ResponseEvents`).

Taken: `input` (a string, or a list of messages, function and custom tool calls and their outputs), `instructions` (a
system message first), `max_output_tokens`, `temperature`, `top_p`, `stream`, `tools` (function and custom tools),
`tool_choice` (its names, "custom" and "allowed_tools" too),
`parallel_tool_calls`, `text.format` (text, json_object, json_schema), `top_logprobs` and `include`'s
"message.output_text.logprobs" (the text's tokens' log-probabilities, as chat's), `metadata`, `user`, and this
server's chat extensions (`confidence`, `mode`, `top_k`, `seed`, `stop`, penalties, ...). With `store` (the default) a
response is kept with its conversation (`response_store.py`): `previous_response_id` goes on from it (its messages and
answer come before the new input; its instructions do not), and `GET /v1/responses/{id}` returns it. `conversation`
and `background` are refused, as are tools of other types and input that is not text.
"""

from __future__ import annotations

import copy
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import NamedTuple

from hamburger.serve.protocol import APIError, Parsed, bad, parse_body, prepare
from hamburger.serve.response_store import ResponseStore

RENAMED = {"messages": "input", "max_tokens": "max_output_tokens", "response_format": "text.format"}  # chat -> ours
IGNORED = {"store", "prompt_cache_key", "safety_identifier", "service_tier", "text"}  # (text: its format is read)
ABSENT = ("conversation", "background", "prompt")  # what this server keeps no state for: refused unless unset
NEUTRAL = {"reasoning": (None, {}), "truncation": (None, "disabled"), "max_tool_calls": (None,)}
LOGPROBS = "message.output_text.logprobs"  # the `include` entry that asks for the text's log-probabilities
CHAT_ONLY = {"messages", "max_tokens", "max_completion_tokens", "response_format", "logprobs", "n", "stream_options",
             "functions", "function_call"}  # chat's names for what this API names otherwise, or has not
SSE_EVENT = "event: {type}\ndata: {data}\n\n"
PAYLOAD = {"function": "arguments", "custom": "input"}  # what a call of each kind carries
DELTA_EVENT = {"function": "function_call_arguments", "custom": "custom_tool_call_input"}  # (its stream events)
TOOL_FIELDS = {"function": ("name", "description", "parameters", "strict"),
               "custom": ("name", "description", "format")}  # what chat takes of each tool


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class Translation(NamedTuple):
    """A Responses request as the chat request that answers it: ``chat`` its body, ``request`` the request as read,
    ``origins`` each chat message's field in the request ("instructions", "previous_response_id", or "input[i]": input
    items may merge), ``history`` its messages but the instructions (what a response to it keeps), ``keep``: its
    response is to be kept."""

    chat: dict
    request: dict
    origins: list[str]
    history: list[dict]
    keep: bool = False

    def renamed(self, e: APIError) -> APIError:
        """A chat request's error as the Responses request's: its field's name in this API."""
        message = re.match(r"messages\[(\d+)\]", e.param or "")
        if message:  # (a string, input or instructions, is the message's content)
            origin = self.origins[int(message.group(1))]
            e.param = origin if "[" not in origin else origin + e.param[message.end():]
        elif e.param and e.param.split(".", 1)[0] in RENAMED:
            head = e.param.split(".", 1)[0]
            e.param = RENAMED[head] + e.param[len(head):]
        return e


# ------------------------------------------------------------------------------------ the request
def to_chat(raw: bytes, store: ResponseStore | None = None) -> Translation:
    """A Responses request body as the chat request that answers it (going on from a response ``store`` keeps); 400
    for what this API or this server does not take."""
    body = parse_body(raw)
    chat_only = sorted(CHAT_ONLY & set(body))
    if chat_only:
        raise bad(f"unrecognized request argument supplied: {chat_only[0]}", chat_only[0], "unsupported_parameter")
    for key in ABSENT:
        if body.get(key) not in (None, False):
            raise bad(f"'{key}' is not supported: this server stores no responses, conversations or prompts", key,
                      "unsupported_parameter")
    for key, neutral in NEUTRAL.items():
        if body.get(key) not in neutral:
            raise bad(f"'{key}' is not supported by this server (got {body[key]!r})", key, "unsupported_parameter")
    chat = {k: v for k, v in body.items() if k not in ("input", "instructions", "max_output_tokens", "tools",
                                                      "tool_choice", "previous_response_id", "include",
                                                      "top_logprobs", *IGNORED, *ABSENT, *NEUTRAL)}
    earlier = _earlier(body.get("previous_response_id"), store)
    chat["messages"], origins = _messages(body.get("input"), body.get("instructions"), earlier)
    if body.get("max_output_tokens") is not None:
        value = body["max_output_tokens"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(f"'max_output_tokens' must be an integer of at least 1, got {value!r}", "max_output_tokens")
        chat["max_tokens"] = value
    if body.get("tools"):
        chat["tools"] = [_tool(t, i) for i, t in enumerate(body["tools"])] if isinstance(body["tools"], list) else \
            body["tools"]
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _choice(body["tool_choice"])
    text_format = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if text_format is not None:
        chat["response_format"] = _format(text_format)
    if body.get("stream"):
        chat["stream_options"] = {"include_usage": True}  # (the completed event carries the usage)
    include = body.get("include") or []
    if not isinstance(include, list) or not all(isinstance(x, str) for x in include):
        raise bad("'include' must be a list of strings", "include")
    if LOGPROBS in include or body.get("top_logprobs"):  # (other entries name what this server never makes)
        chat["logprobs"], chat["top_logprobs"] = True, body.get("top_logprobs") or 0
    history = [m for m, origin in zip(chat["messages"], origins) if origin != "instructions"]
    return Translation(chat, body, origins, history, store is not None and body.get("store") is not False)


def _earlier(rid, store: ResponseStore | None) -> list[dict]:
    """The conversation of the response a request goes on from (`previous_response_id`), [] for none."""
    if rid is None:
        return []
    if store is None:
        raise bad("'previous_response_id' is not supported: this server keeps no responses", "previous_response_id",
                  "unsupported_parameter")
    kept = store.get(rid) if isinstance(rid, str) else None
    if kept is None:
        raise bad(f"previous response {rid!r} not found (it was not stored, or no longer is)", "previous_response_id",
                  "previous_response_not_found")
    return [dict(m) for m in kept[1]]


def prepare_response(raw: bytes, tokenizer, default_max_tokens: int, default_confidence: float | None,
                     default_mode: str = "hamburger", store: ResponseStore | None = None) -> tuple[Parsed, Translation]:
    """A Responses request body -> (the `Parsed` chat request that answers it, its `Translation`)."""
    asked = to_chat(raw, store)
    try:
        return prepare(json.dumps(asked.chat).encode(), "chat", tokenizer, default_max_tokens, default_confidence,
                       default_mode), asked
    except APIError as e:
        raise asked.renamed(e) from e


def _messages(given, instructions, earlier: list[dict]) -> tuple[list[dict], list[str]]:
    """The chat messages of `instructions`, an ``earlier`` conversation and `input`, and each one's field."""
    if instructions is not None and not isinstance(instructions, str):
        raise bad("'instructions' must be a string", "instructions")
    out = ([{"role": "system", "content": instructions}] if instructions else []) + earlier
    origins = ["instructions"] * (len(out) - len(earlier)) + ["previous_response_id"] * len(earlier)
    if isinstance(given, str):
        return out + [{"role": "user", "content": given}], origins + ["input"]
    if not isinstance(given, list) or not given:
        raise bad("'input' must be a string or a non-empty list of items", "input")
    for i, item in enumerate(given):
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message":
            out.append({"role": item.get("role"), "content": _text(item.get("content"), i)})
        elif kind in ("function_call", "custom_tool_call"):
            payload = "arguments" if kind == "function_call" else "input"
            call_type = "function" if kind == "function_call" else "custom"
            call = {"id": _field(item, "call_id", i), "type": call_type,
                    call_type: {"name": _field(item, "name", i), payload: _field(item, payload, i)}}
            if out and out[-1]["role"] == "assistant":  # (an answer's text and calls are one message)
                out[-1].setdefault("tool_calls", []).append(call)
                continue
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append({"role": "tool", "tool_call_id": _field(item, "call_id", i),
                        "content": _text(item.get("output"), i, "output")})
        else:
            raise bad(f"input[{i}] must be a message, a function_call, a custom_tool_call or their output item",
                      f"input[{i}]", "unsupported_parameter")
        origins.append(f"input[{i}]")
    return out, origins


def _field(item: dict, key: str, i: int) -> str:
    if not isinstance(item.get(key), str):
        raise bad(f"input[{i}].{key} must be a string", f"input[{i}].{key}")
    return item[key]


def _text(content, i: int, key: str = "content") -> str:
    """A message's content: a string, or text parts (input_text, output_text) joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in ("input_text", "output_text")
                                         and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise bad(f"input[{i}].{key} must be a string or a list of text parts (this server reads text only)",
              f"input[{i}].{key}")


def _tool(tool, i: int) -> dict:
    """A Responses tool (its fields beside its type) as chat's (its fields under its type)."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    if kind not in TOOL_FIELDS:
        raise bad(f"tools[{i}] must be a function or a custom tool (this server calls no built-in tools)", "tools",
                  "unsupported_parameter")
    spec = {k: tool[k] for k in TOOL_FIELDS[kind] if tool.get(k) is not None}
    fmt = spec.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "grammar":  # (its grammar's fields beside its type, as chat's not)
        spec["format"] = {"type": "grammar", "grammar": {k: v for k, v in fmt.items() if k != "type"}}
    return {"type": kind, kind: spec}


def _choice(choice):
    """A Responses `tool_choice` as chat's: a named tool's name under its type, and so the allowed tools'."""
    def named(ref):
        kind = ref.get("type") if isinstance(ref, dict) else None
        return {"type": kind, kind: {"name": ref["name"]}} if kind in TOOL_FIELDS and "name" in ref else ref

    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        tools = choice.get("tools")
        return {"type": "allowed_tools", "allowed_tools": {
            "mode": choice.get("mode"), "tools": [named(t) for t in tools] if isinstance(tools, list) else tools}}
    return named(choice)


def _format(fmt) -> dict:
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_schema":
        return {"type": "json_schema", "json_schema": {k: fmt.get(k) for k in ("name", "schema", "strict")}}
    if kind in ("text", "json_object"):
        return {"type": kind}
    raise bad("'text.format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": \"json_schema\", "
              "\"name\": ..., \"schema\": {...}}", "text.format", "invalid_value")


# ------------------------------------------------------------------------------------ the answer
def _usage(chat_usage: dict) -> dict:
    return {"input_tokens": chat_usage["prompt_tokens"], "input_tokens_details": chat_usage["prompt_tokens_details"],
            "output_tokens": chat_usage["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": chat_usage["total_tokens"], "hamburger": chat_usage["hamburger"]}


def response_object(rid: str, model: str, asked: Translation, output: list[dict], status: str,
                    usage: dict | None = None) -> dict:
    """A response object: ``output`` its items, ``status`` "in_progress", "completed" or "incomplete" (its token
    limit), the request's settings as they were taken."""
    request = asked.request
    fmt = (request.get("text") or {}).get("format") or {"type": "text"}
    return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status, "model": model,
            "output": output, "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "instructions": request.get("instructions"), "max_output_tokens": request.get("max_output_tokens"),
            "temperature": request.get("temperature"), "top_p": request.get("top_p"),
            "tools": request.get("tools") or [], "tool_choice": request.get("tool_choice") or "auto",
            "parallel_tool_calls": request.get("parallel_tool_calls", True), "text": {"format": fmt},
            "metadata": request.get("metadata") or {}, "previous_response_id": request.get("previous_response_id"),
            "store": asked.keep,
            "usage": None if usage is None else _usage(usage)}


def message_item(text: str, status: str = "completed", logprobs: list | None = None) -> dict:
    """A message item of ``text``; ``logprobs``: its tokens' (chat's `logprobs.content` entries, the same shape)."""
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs or []}
    return {"type": "message", "id": new_id("msg"), "status": status, "role": "assistant",
            "content": [part] if text is not None else []}


def call_item(call: dict, status: str = "completed") -> dict:
    """The output item of a chat call: a function_call, or a custom_tool_call (which has no status)."""
    if call.get("type") == "custom":
        return {"type": "custom_tool_call", "id": new_id("ctc"), "call_id": call["id"],
                "name": call["custom"]["name"], "input": call["custom"]["input"]}
    return {"type": "function_call", "id": new_id("fc"), "call_id": call["id"], "name": call["function"]["name"],
            "arguments": call["function"]["arguments"], "status": status}


def answer_message(output: list[dict]) -> dict:
    """A response's output items as the assistant's chat message (what a request that goes on from it reads)."""
    text = "".join(part["text"] for item in output if item["type"] == "message" for part in item["content"])
    calls = [{"id": item["call_id"], "type": "function",
              "function": {"name": item["name"], "arguments": item["arguments"]}} if item["type"] == "function_call"
             else {"id": item["call_id"], "type": "custom", "custom": {"name": item["name"], "input": item["input"]}}
             for item in output if item["type"] in ("function_call", "custom_tool_call")]
    return {"role": "assistant", "content": text or (None if calls else ""), **({"tool_calls": calls} if calls else {})}


def kept(store: ResponseStore | None, asked: Translation, response: dict) -> dict:
    """``response``, kept in ``store`` with its conversation where the request asked that."""
    if store is not None and asked.keep:
        store.add(response, asked.history + [answer_message(response["output"])])
    return response


def response_body(model: str, asked: Translation, completion: dict) -> dict:
    """The response object of a chat completion (one choice) that answered ``asked``."""
    choice = completion["choices"][0]
    message, incomplete = choice["message"], choice["finish_reason"] == "length"
    status = "incomplete" if incomplete else "completed"
    logprobs = (choice.get("logprobs") or {}).get("content")  # (every token's, calls' too, as chat gives them)
    output = [message_item(message["content"], status, logprobs)] \
        if message.get("content") or not message.get("tool_calls") else []
    output += [call_item(c, status) for c in message.get("tool_calls") or []]
    return response_object(new_id("resp"), model, asked, output, status, completion["usage"])


class ResponseEvents:
    """A streamed chat answer's payloads (its chunks, its usage chunk, "[DONE]", or an error body) -> the Responses
    stream's events, each numbered: response.created and .in_progress; for text a message item (output_item.added,
    content_part.added, output_text.delta..., then output_text.done, content_part.done, output_item.done); for each
    call a function_call item (output_item.added, function_call_arguments.delta..., .done, output_item.done), or a
    custom_tool_call item (its custom_tool_call_input.delta... and .done); then
    response.completed, or response.incomplete at the token limit; an error event where the answer failed."""

    def __init__(self, model: str, asked: Translation, store: ResponseStore | None = None):
        self.model, self.asked, self.store, self.rid = model, asked, store, new_id("resp")
        self.sequence, self.items, self.open = 0, [], None  # the items so far; the index of the one being written
        self.calls: dict[int, int] = {}  # a chat call's index -> its item's
        self.finish, self.usage = None, None
        self.logprobs: list[dict] = []  # tokens' log-probabilities not sent yet (they go with the next text)

    def _event(self, kind: str, **fields) -> dict:
        """An event as things stand (its items copied: they grow on)."""
        self.sequence += 1
        return {"type": kind, "sequence_number": self.sequence - 1, **copy.deepcopy(fields)}

    def start(self) -> list[dict]:
        created = response_object(self.rid, self.model, self.asked, [], "in_progress")
        return [self._event("response.created", response=created), self._event("response.in_progress",
                                                                               response=created)]

    def feed(self, payload) -> list[dict]:
        """The events of one chat payload."""
        if payload == "[DONE]":
            return self._close() + self._end()
        if "error" in payload:
            error = payload["error"]
            return [self._event("error", code=error.get("code"), message=error.get("message"),
                                param=error.get("param"))]
        if payload.get("usage"):
            self.usage = payload["usage"]
        out = []
        for choice in payload.get("choices", []):
            delta = choice.get("delta") or {}
            self.logprobs += (choice.get("logprobs") or {}).get("content") or []
            if delta.get("content"):
                out += self._text(delta["content"])
            for call in delta.get("tool_calls") or []:
                out += self._call(call)
            self.finish = choice.get("finish_reason") or self.finish
        return out

    def _text(self, text: str) -> list[dict]:
        out = []
        if self.open is None or self.items[self.open]["type"] != "message":
            out += self._close()
            self.items.append(message_item("", "in_progress"))
            self.open = len(self.items) - 1
            item = self.items[self.open]
            out += [self._event("response.output_item.added", output_index=self.open, item={**item, "content": []}),
                    self._event("response.content_part.added", output_index=self.open, item_id=item["id"],
                                content_index=0, part=item["content"][0])]
        item = self.items[self.open]
        logprobs, self.logprobs = self.logprobs, []
        item["content"][0]["text"] += text
        item["content"][0]["logprobs"] += logprobs
        return out + [self._event("response.output_text.delta", output_index=self.open, item_id=item["id"],
                                  content_index=0, delta=text, logprobs=logprobs)]

    def _call(self, call: dict) -> list[dict]:
        out = []
        if call["index"] not in self.calls:
            out += self._close()
            kind = call.get("type", "function")
            self.items.append(call_item({"id": call["id"], "type": kind, kind: {**call[kind], PAYLOAD[kind]: ""}},
                                        "in_progress"))
            self.open = self.calls[call["index"]] = len(self.items) - 1
            out.append(self._event("response.output_item.added", output_index=self.open, item=self.items[-1]))
        at = self.calls[call["index"]]
        item = self.items[at]
        kind = "custom" if item["type"] == "custom_tool_call" else "function"
        delta = (call.get(kind) or {}).get(PAYLOAD[kind]) or ""
        if delta:
            item[PAYLOAD[kind]] += delta
            out.append(self._event(f"response.{DELTA_EVENT[kind]}.delta", output_index=at, item_id=item["id"],
                                   delta=delta))
        return out

    def _close(self) -> list[dict]:
        """The events that end the item being written."""
        if self.open is None:
            return []
        at, item, self.open = self.open, self.items[self.open], None
        if "status" in item:
            item["status"] = "incomplete" if self.finish == "length" else "completed"
        if item["type"] == "message":
            part = item["content"][0]
            part["logprobs"] += self.logprobs
            self.logprobs = []
            out = [self._event("response.output_text.done", output_index=at, item_id=item["id"], content_index=0,
                               text=part["text"], logprobs=part["logprobs"]),
                   self._event("response.content_part.done", output_index=at, item_id=item["id"], content_index=0,
                               part=part)]
        elif item["type"] == "custom_tool_call":
            out = [self._event("response.custom_tool_call_input.done", output_index=at, item_id=item["id"],
                               input=item["input"])]
        else:
            out = [self._event("response.function_call_arguments.done", output_index=at, item_id=item["id"],
                               arguments=item["arguments"])]
        return out + [self._event("response.output_item.done", output_index=at, item=item)]

    def _end(self) -> list[dict]:
        status = "incomplete" if self.finish == "length" else "completed"
        for item in self.items:
            if "status" in item:
                item["status"] = status
        final = kept(self.store, self.asked, response_object(self.rid, self.model, self.asked, self.items, status,
                                                             self.usage))
        return [self._event(f"response.{status}", response=final)]


async def stream(payloads: AsyncIterator, model: str, asked: Translation,
                 store: ResponseStore | None = None) -> AsyncIterator[str]:
    """The server-sent events of a streamed response: its chat answer's ``payloads`` (`lifecycle.payloads`), as
    events."""
    events = ResponseEvents(model, asked, store)
    for event in events.start():
        yield sse_event(event)
    async with aclosing(payloads) as items:
        async for payload in items:
            for event in events.feed(payload):
                yield sse_event(event)


def sse_event(event: dict) -> str:
    """One event of the Responses stream: its type named, then its JSON."""
    return SSE_EVENT.format(type=event["type"], data=json.dumps(event))
