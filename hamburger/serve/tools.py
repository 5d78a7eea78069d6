"""Function calling: OpenAI's `tools`, `tool_choice` and `parallel_tool_calls`, and a conversation's earlier calls (an
assistant message's `tool_calls`, a `tool` message's result).

What an answer is, by `tool_choice`:
- "none" (the default without tools): text; the tools are not shown to the model.
- a named function ({"type": "function", "function": {"name": ...}}): that function's arguments, the answer held to
  its parameters' JSON schema (`engine/grammar.py`), as OpenAI's strict mode holds them.
- "required": one or more calls, the answer held to a JSON array of {"name": ..., "arguments": {...}} objects (one at
  most with `parallel_tool_calls` false, and where the template does not render tools: such a model, never taught to
  call, repeats a call until its token limit when it may make several).
- "auto" (the default with tools): the model chooses. Its text is free until it writes `<tool_call>`: from there the
  answer is held (a grammar, `Tools.grammar`) to `{"name": ..., "arguments": {...}}` naming a tool, with arguments
  valid under its schema, laid out as the templates show it, then `</tool_call>`; then text again, or another call
  where several are allowed. Each such call is a call, the rest is the message's content. This is the Hermes
  convention, which the chat templates of Qwen2.5, Qwen3, Hermes and SmolLM3 teach; a model that never learned to call
  writes text, and the answer holds no call.

The tools reach the model through the chat template's `tools` where the template renders them. A template that
ignores them (SmolLM2's) gets them in the system message, with the convention above, and earlier calls and results
as text in that convention (a result as a user turn in <tool_response> tags). An answer that holds calls ends with
the finish reason "tool_calls" (unless its token limit cut it).
"""

from __future__ import annotations

import json
import re
import uuid
import weakref
from dataclasses import dataclass, field

from hamburger.engine.grammar import compile_schema
from hamburger.errors import HamburgerError

MAX_TOOLS = 128  # as OpenAI allows
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
OPEN, CLOSE = "<tool_call>", "</tool_call>"
CALL = re.compile(re.escape(OPEN) + r"\s*(.*?)\s*(?:" + re.escape(CLOSE) + r"|\Z)", re.DOTALL)
NO_PARAMETERS = {"type": "object", "properties": {}, "additionalProperties": False}  # a function without parameters
HERMES_LAYOUT = {"whitespace_flexible": False, "key_separator": ": ", "item_separator": ", "}  # (Python's json.dumps)
_TEMPLATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # tokenizer -> what its template does


class ToolsError(ValueError):
    """A request's tools, tool choice or earlier calls are malformed (``param``: the field at fault)."""

    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Function:
    name: str
    description: str | None
    parameters: dict

    def spec(self) -> dict:
        """The tool as OpenAI (and the chat templates' `tools`) write it."""
        function = {"name": self.name, **({"description": self.description} if self.description else {}),
                    "parameters": self.parameters}
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class Tools:
    """A request's tools and ``choice``: "auto", "required" or a tool's name ("none" is no `Tools`)."""

    functions: tuple[Function, ...]
    choice: str
    parallel: bool = True

    @property
    def named(self) -> bool:
        """The choice is a function's name: the answer is its arguments."""
        return self.choice not in ("auto", "required")

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)

    def schema(self) -> dict | None:
        """The JSON schema the answer is held to (None: free text, "auto")."""
        if self.choice == "auto":
            return None
        if self.choice != "required":
            return self.function(self.choice).parameters
        return {"type": "array", "minItems": 1, "items": {"anyOf": self._call_schemas()},
                **({} if self.parallel else {"maxItems": 1})}

    def _call_schemas(self) -> list[dict]:
        """The JSON schema of a call to each tool: {"name": its name, "arguments": what its parameters allow}."""
        return [{"type": "object", "properties": {"name": {"const": f.name}, "arguments": f.parameters},
                 "required": ["name", "arguments"], "additionalProperties": False} for f in self.functions]

    def grammar(self) -> str | None:
        """The Lark grammar (llguidance's) an "auto" answer is held to: free text, in which `<tool_call>` begins a call
        that must name a tool and hold its arguments (one call at most unless `parallel`); None: another choice."""
        if self.choice != "auto":
            return None
        call = {"anyOf": self._call_schemas(), "x-guidance": HERMES_LAYOUT}
        return "\n".join([
            "%llguidance {}",
            f"start: call{'*' if self.parallel else '?'} TAIL",
            "TEXT: /(?s:.*)/",
            f"TAIL: /(?s:.*)/ & ~/(?s:.*){OPEN}(?s:.*)/",  # (after the calls: text that begins no call)
            f"head[lazy]: TEXT {json.dumps(OPEN)}",  # (text up to the first marker)
            f'call: head "\\n"? %json {json.dumps(call)} "\\n"? {json.dumps(CLOSE)}'])

    def calls(self, text: str) -> tuple[str | None, list[dict]]:
        """An answer's text -> (the message's content, its calls in OpenAI's shape); an answer that is not whole
        calls (cut by its token limit) is content."""
        if self.named:  # the text is the function's arguments, whole or cut
            return None, [call(self.choice, text)]
        if self.choice == "required":
            try:
                found = [call(c["name"], compact(c["arguments"])) for c in json.loads(text)]
            except (ValueError, TypeError, KeyError):
                found = []
            return (None, found) if found else (text, [])
        found, kept, at = [], [], 0
        for match in CALL.finditer(text):
            one = self._hermes_call(match.group(1))
            if one is not None:
                found.append(one)
                kept.append(text[at:match.start()])
                at = match.end()
        if not found:
            return text, []
        content = "".join(kept) + text[at:]
        return content if content.strip() else None, found

    def _hermes_call(self, body: str) -> dict | None:
        try:
            value = json.loads(body)
        except ValueError:
            return None
        if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not self.function(value["name"]):
            return None
        arguments = value.get("arguments", value.get("parameters", {}))
        return call(value["name"], compact(arguments)) if isinstance(arguments, dict) else None

    def system_note(self) -> str:
        """What a chat template that ignores tools gets in the system message."""
        listed = "\n".join(json.dumps(f.spec(), ensure_ascii=False) for f in self.functions)
        return (f"You can call functions. To call one, write {OPEN}{{\"name\": <its name>, \"arguments\": <its "
                f"arguments as a JSON object>}}{CLOSE}. The functions:\n<tools>\n{listed}\n</tools>")


def compact(value) -> str:
    """JSON as a held answer writes it: no free whitespace (`engine/grammar.py`'s layout)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def call(name: str, arguments: str) -> dict:
    """One call in OpenAI's shape (its id made here)."""
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
            "function": {"name": name, "arguments": arguments}}


# ------------------------------------------------------------------------------------ the request
def parse_tools(body: dict) -> Tools | None:
    """A chat request's `tools`, `tool_choice` and `parallel_tool_calls` -> `Tools` (None: answer in text)."""
    tools, choice = body.get("tools") or [], body.get("tool_choice")
    parallel = True if body.get("parallel_tool_calls") is None else body["parallel_tool_calls"]
    if not isinstance(parallel, bool):
        raise ToolsError(f"'parallel_tool_calls' must be a boolean, got {parallel!r}", "parallel_tool_calls")
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        raise ToolsError(f"'tools' must be a list of at most {MAX_TOOLS} tools", "tools")
    functions = tuple(_function(t, i) for i, t in enumerate(tools))
    if len({f.name for f in functions}) < len(functions):
        raise ToolsError("'tools' names a function twice", "tools")
    for i, f in enumerate(functions):
        try:
            compile_schema(f.parameters)
        except HamburgerError as e:
            raise ToolsError(f"tools[{i}].function.parameters: {e}", "tools") from e
    name = _choice(choice, functions)
    if name == "none" or (name == "auto" and not functions):
        return None
    return Tools(functions, name, parallel)


def _function(tool, i: int) -> Function:
    spec = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not NAME.fullmatch(spec["name"]):
        raise ToolsError(f"tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}} with a name "
                         "of 1-64 letters, digits, '_' or '-'", "tools")
    description, parameters = spec.get("description"), spec.get("parameters", NO_PARAMETERS)
    if description is not None and not isinstance(description, str):
        raise ToolsError(f"tools[{i}].function.description must be a string", "tools")
    if not isinstance(parameters, dict):
        raise ToolsError(f"tools[{i}].function.parameters must be a JSON schema (an object)", "tools")
    return Function(spec["name"], description, parameters or NO_PARAMETERS)


def _choice(choice, functions: tuple[Function, ...]) -> str:
    """`tool_choice` -> "none", "auto", "required" or a tool's name."""
    if choice is None:
        return "auto" if functions else "none"
    if choice in ("none", "auto", "required"):
        if choice == "required" and not functions:
            raise ToolsError("'tool_choice' \"required\" needs 'tools'", "tool_choice")
        return choice
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) and choice.get("type") == "function" \
        else None
    if not isinstance(name, str):
        raise ToolsError("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                         "\"function\": {\"name\": ...}}", "tool_choice")
    if name not in {f.name for f in functions}:
        raise ToolsError(f"'tool_choice' names {name!r}, which is not among 'tools'", "tool_choice")
    return name


# ------------------------------------------------------------------------------------ the prompt
def renders_tools(tokenizer) -> bool:
    """Whether the tokenizer's chat template shows the model `tools` (it renders a conversation otherwise with them)."""
    return _asks(tokenizer, "tools")


def takes_system(tokenizer) -> bool:
    """Whether the tokenizer's chat template takes a system message (Gemma's refuse one)."""
    return _asks(tokenizer, "system")


def _asks(tokenizer, question: str) -> bool:
    """What a chat template does ("tools": renders them, "system": takes a system message), asked once a tokenizer."""
    answers = _TEMPLATES.setdefault(tokenizer, {})
    if question not in answers:
        user = [{"role": "user", "content": "x"}]
        try:
            if question == "tools":
                probe = [Function("probe", None, NO_PARAMETERS).spec()]
                answers[question] = tokenizer.apply_chat_template(user, tools=probe, tokenize=False) != \
                    tokenizer.apply_chat_template(user, tokenize=False)
            else:
                answers[question] = bool(tokenizer.apply_chat_template([{"role": "system", "content": "x"}, *user],
                                                                       tokenize=False))
        except Exception:  # noqa: BLE001 - a template that fails on them does neither
            answers[question] = False
    return answers[question]


@dataclass
class Conversation:
    """A chat's messages as its template reads them, and the tools shown to the model (``tools``: the template's
    `tools` argument; None where the template ignores them, which then get `Tools.system_note` and earlier calls as
    text)."""

    messages: list[dict]
    tools: list[dict] | None = None
    names: dict = field(default_factory=dict)  # call id -> function name (a result's `name`)

    @classmethod
    def of(cls, messages: list[dict], tools: Tools | None, tokenizer) -> "Conversation":
        """``messages``: OpenAI's, each checked (`_message`); the tools shown when a call may be made. Where the
        template ignores tools, results that follow one another make one user turn (templates that want roles to
        alternate take it), and the tools' note goes in the system message, or before the first message's text where
        the template takes none."""
        native = renders_tools(tokenizer)
        out = cls([], [f.spec() for f in tools.functions] if tools and native else None)
        for i, m in enumerate(messages):
            message = out._message(m, i, native)
            if not native and m["role"] == "tool" and i and messages[i - 1]["role"] == "tool":
                out.messages[-1]["content"] += "\n" + message["content"]
            else:
                out.messages.append(message)
        if tools is not None and not native:
            note, first = tools.system_note(), out.messages[0]
            if first["role"] == "system":
                out.messages[0] = {**first, "content": first["content"] + "\n\n" + note}
            elif takes_system(tokenizer):
                out.messages.insert(0, {"role": "system", "content": note})
            else:
                out.messages[0] = {**first, "content": note + "\n\n" + first["content"]}
        return out

    def _message(self, m: dict, i: int, native: bool) -> dict:
        role, content = m["role"], m.get("content")
        if role == "tool":
            if not isinstance(m.get("tool_call_id"), str):
                raise ToolsError(f"messages[{i}] (a tool's result) needs its 'tool_call_id'", f"messages[{i}]")
            name = self.names.get(m["tool_call_id"], "")
            if native:
                return {"role": "tool", "content": content, "tool_call_id": m["tool_call_id"], "name": name}
            return {"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"}
        calls = m.get("tool_calls")
        if not calls:
            return {"role": role, "content": content or ""}
        if role != "assistant" or not isinstance(calls, list):
            raise ToolsError(f"messages[{i}].tool_calls must be a list, in an assistant's message",
                             f"messages[{i}].tool_calls")
        parsed = [_earlier_call(c, i) for c in calls]
        self.names.update((c["id"], c["function"]["name"]) for c in parsed)
        if native:
            return {"role": "assistant", "content": content or "", "tool_calls": parsed}
        text = "".join(f"{OPEN}{json.dumps({'name': c['function']['name'], 'arguments': c['function']['arguments']})}"
                       f"{CLOSE}" for c in parsed)
        return {"role": "assistant", "content": (content or "") + text}


def _earlier_call(c, i: int) -> dict:
    """An assistant message's call, its arguments read from their JSON text (as the templates take them)."""
    function = c.get("function") if isinstance(c, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str) or \
            not isinstance(function.get("arguments", "{}"), str):
        raise ToolsError(f"messages[{i}].tool_calls holds a call that is not {{\"id\": ..., \"type\": \"function\", "
                         "\"function\": {\"name\": ..., \"arguments\": \"<JSON>\"}}", f"messages[{i}].tool_calls")
    try:
        arguments = json.loads(function.get("arguments", "{}"))
    except ValueError:
        arguments = function["arguments"]
    return {"id": c.get("id") if isinstance(c.get("id"), str) else "", "type": "function",
            "function": {"name": function["name"], "arguments": arguments}}


# ------------------------------------------------------------------------------------ streaming
@dataclass
class CallStream:
    """One streamed answer's text turned into deltas: a named function's arguments go out as they come; "required"
    holds everything back until the answer ends; "auto" sends text as content until a call may begin (`<tool_call>`
    or the start of it), then holds the rest. `close` sends what was held: content and the calls whole. The deltas
    add up to the message `Tools.calls` reads from the whole answer."""

    tools: Tools
    text: str = ""  # the answer so far
    sent: int = 0  # its characters sent as content or arguments
    called: bool = False  # calls went out

    def delta(self, text: str) -> dict:
        """The delta of the answer's next ``text``."""
        self.text += text
        if self.tools.named:  # a named function's arguments
            self.sent = len(self.text)
            if not self.called:
                self.called = True
                return {"tool_calls": [{"index": 0, **call(self.tools.choice, self.text)}]}
            return {"tool_calls": [{"index": 0, "function": {"arguments": text}}]} if text else {}
        if self.tools.choice == "required":
            return {}
        start = self.text.find(OPEN, self.sent)
        upto = start if start >= 0 else _before_marker(self.text)
        if upto <= self.sent or not self.text[:upto].strip():  # (content of whitespace alone may be no content)
            return {}
        out, self.sent = self.text[self.sent:upto], upto
        return {"content": out}

    def close(self, text: str) -> dict:
        """The last delta, with the answer's last ``text``: what was held back, as content and calls."""
        if self.tools.named:
            return self.delta(text)
        self.text += text
        content, calls = self.tools.calls(self.text)
        rest = (content or "")[self.sent:]  # (what went out is the text before the first call: content's start)
        self.sent, self.called = len(self.text), bool(calls)
        return {**({"content": rest} if rest else {}),
                **({"tool_calls": [{"index": k, **c} for k, c in enumerate(calls)]} if calls else {})}


def _before_marker(text: str) -> int:
    """Where a tail of ``text`` that may grow into `<tool_call>` begins (its length when none)."""
    for k in range(min(len(OPEN) - 1, len(text)), 0, -1):
        if text.endswith(OPEN[:k]):
            return len(text) - k
    return len(text)
