"""Tool calling: OpenAI's `tools` (functions, and custom tools that take text), `tool_choice` and
`parallel_tool_calls`, and a conversation's earlier calls (an assistant message's `tool_calls`, a `tool` message's
result).

What an answer is, by `tool_choice`:
- "none" (the default without tools): text; the tools are not shown to the model.
- a named function ({"type": "function", "function": {"name": ...}}): that function's arguments, the answer held to
  its parameters' JSON schema (`engine/grammar.py`), as OpenAI's strict mode holds them.
- "required": one or more calls, the answer held to a JSON array of {"name": ..., "arguments": {...}} objects (one at
  most with `parallel_tool_calls` false, and where the template does not render tools: such a model, never taught to
  call, repeats a call until its token limit when it may make several); with custom tools, see "auto".
- a named custom tool ({"type": "custom", "custom": {"name": ...}}): its input, held to the tool's grammar (its
  `format`: Lark or a regex) or free text.
- "auto" (the default with tools): the model chooses. Its text is free until it writes `<tool_call>`: from there the
  answer is held (a grammar, `Tools.grammar`) to `{"name": ..., "arguments": {...}}` naming a tool, with arguments
  valid under its schema, laid out as the templates show it, then `</tool_call>`; then text again, or another call
  where several are allowed. Each such call is a call, the rest is the message's content. This is the Hermes
  convention, which the chat templates of Qwen2.5, Qwen3, Hermes and SmolLM3 teach; a model that never learned to call
  writes text, and the answer holds no call. A call's arguments are as the model wrote them (laid out as above); a
  call cut by the token limit has them as far as they went. A custom tool's call is `{"name": ...}`, a newline, then
  its input as it is (no JSON to escape it, which is why custom tools exist), held to its grammar, up to
  `</tool_call>`; with custom tools among those that may be called, "required" is such calls alone, one after another.
- `{"type": "allowed_tools", "allowed_tools": {"mode": "auto" or "required", "tools": [...]}}`: that mode, with calls
  to the tools named there only (all are shown to the model).

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

from hamburger.engine.grammar import compile_lark, compile_schema
from hamburger.errors import HamburgerError
from hamburger.serve.structured import lark_of, regex_term

MAX_TOOLS = 128  # as OpenAI allows
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
OPEN, CLOSE = "<tool_call>", "</tool_call>"
NO_PARAMETERS = {"type": "object", "properties": {}, "additionalProperties": False}  # a function without parameters
SYNTAX = {"lark": "Lark grammar", "regex": "regular expression"}  # (a custom tool's `format`)
HERMES_LAYOUT = {"whitespace_flexible": False, "key_separator": ": ", "item_separator": ", "}  # (Python's json.dumps)
_JSON = json.JSONDecoder()
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
class Custom:
    """A custom tool: its input is text, free (``syntax`` None) or held to a grammar (``syntax`` "lark" or "regex",
    its ``definition``: the tool's `format`)."""

    name: str
    description: str | None
    syntax: str | None = None
    definition: str = ""

    @property
    def lark(self) -> str | None:
        """The Lark grammar (llguidance's) of the input as a whole (None: free text)."""
        return None if self.syntax is None else lark_of("regex" if self.syntax == "regex" else "grammar",
                                                         self.definition)

    def spec(self) -> dict:
        """The tool as the chat templates' `tools` (which know functions only) and the system note show it: a function
        whose description says how its call is written."""
        how = (f"A custom tool: its input is text, not JSON. Call it as {OPEN}{_header(self.name)}, a new line, "
               f"then the input, then {CLOSE}.")
        if self.syntax is not None:
            how += f" The input follows this {SYNTAX[self.syntax]}: {self.definition}"
        description = f"{self.description} {how}" if self.description else how
        return {"type": "function", "function": {"name": self.name, "description": description,
                                                 "parameters": {"type": "object", "properties": {}}}}

    def body(self, k: int) -> list[str]:
        """The Lark rules of a call to this tool (rule `custom{k}`) after `<tool_call>`: `{"name": ...}`, a newline,
        then the input, held to its grammar, up to `</tool_call>`. Free text and a regex end at the first marker
        (lazily: a greedy one might never end); a Lark grammar's ends where its last lexeme does."""
        header = {"type": "object", "properties": {"name": {"const": self.name}}, "required": ["name"],
                  "additionalProperties": False, "x-guidance": HERMES_LAYOUT}
        first = f"custom{k}: %json {json.dumps(header)} \"\\n\" "
        if self.syntax == "lark":
            return [first + f"%lark {{\n{self.lark}\n}} {json.dumps(CLOSE)}"]
        text = "TEXT" if self.syntax is None else regex_term(self.definition)
        return [first + f"input{k}", f"input{k}[lazy]: {text} {json.dumps(CLOSE)}"]


@dataclass(frozen=True)
class Tools:
    """A request's tools (``listed``, all shown to the model) and ``choice``: "auto", "required" or a tool's name
    ("none" is no `Tools`); ``allowed``: the names a call may name (None: all)."""

    listed: tuple[Function | Custom, ...]
    choice: str
    parallel: bool = True
    allowed: frozenset[str] | None = None

    @property
    def named(self) -> bool:
        """The choice is a tool's name: the answer is its arguments (a function's) or its input (a custom tool's)."""
        return self.choice not in ("auto", "required")

    @property
    def callable(self) -> tuple[Function | Custom, ...]:
        return tuple(t for t in self.listed if self.allowed is None or t.name in self.allowed)

    @property
    def hermes(self) -> bool:
        """The answer's calls are written as `<tool_call>` blocks (`grammar`), not a JSON array (`schema`)."""
        return self.choice == "auto" or (self.choice == "required" and
                                         any(isinstance(t, Custom) for t in self.callable))

    def tool(self, name: str) -> Function | Custom | None:
        return next((t for t in self.listed if t.name == name), None)

    def schema(self) -> dict | None:
        """The JSON schema the answer is held to (None: `grammar`, or free text)."""
        if self.named:
            named = self.tool(self.choice)
            return named.parameters if isinstance(named, Function) else None
        if self.hermes:
            return None
        return {"type": "array", "minItems": 1, "items": {"anyOf": self._call_schemas()},
                **({} if self.parallel else {"maxItems": 1})}

    def _call_schemas(self) -> list[dict]:
        """The JSON schema of a call to each function that may be called: {"name": its name, "arguments": what its
        parameters allow}."""
        return [{"type": "object", "properties": {"name": {"const": f.name}, "arguments": f.parameters},
                 "required": ["name", "arguments"], "additionalProperties": False}
                for f in self.callable if isinstance(f, Function)]

    def grammar(self) -> str | None:
        """The Lark grammar (llguidance's) the answer is held to; None: `schema`, or free text. A named custom tool's:
        its input's. "auto": free text, in which `<tool_call>` begins a call that must name a tool and hold its
        arguments or input (one call at most unless `parallel`); "required" with custom tools: such calls alone."""
        if self.named:
            named = self.tool(self.choice)
            return named.lark if isinstance(named, Custom) else None
        if not self.hermes:
            return None
        many = ("*" if self.parallel else "?") if self.choice == "auto" else ("+" if self.parallel else "")
        calls, bodies, rules = self._call_schemas(), [], []
        if calls:
            bodies.append("functions")
            rules.append(f"functions: %json {json.dumps({'anyOf': calls, 'x-guidance': HERMES_LAYOUT})} "
                         f"\"\\n\"? {json.dumps(CLOSE)}")
        for k, tool in enumerate(t for t in self.callable if isinstance(t, Custom)):
            bodies.append(f"custom{k}")
            rules += tool.body(k)
        if self.choice == "auto":
            lines = [f"start: call{many} TAIL",
                     f"TAIL: /(?s:.*)/ & ~/(?s:.*){OPEN}(?s:.*)/",  # (after the calls: text that begins no call)
                     f"head[lazy]: TEXT {json.dumps(OPEN)}"]  # (text up to a call's marker)
        else:  # (calls alone, a newline between two)
            lines = [f"start: call{many}", f'head: "\\n"? {json.dumps(OPEN)}']
        return "\n".join(["%llguidance {}", *lines, "TEXT: /(?s:.*)/", f'call: head "\\n"? ({" | ".join(bodies)})',
                          *rules])

    def calls(self, text: str) -> tuple[str | None, list[dict]]:
        """An answer's text -> (the message's content, its calls in OpenAI's shape). Cut by its token limit: a JSON
        array of calls is content; a named tool's, or a `<tool_call>` block's whose header was written, is a call as
        far as it went (`CallStream`, which reads the blocks)."""
        if self.named:  # the text is the function's arguments, or the custom tool's input, whole or cut
            return None, [call(self.tool(self.choice), text)]
        if not self.hermes:
            names = {t.name: t for t in self.callable}
            try:
                found = [call(names[c["name"]], compact(c["arguments"])) for c in json.loads(text)]
            except (ValueError, TypeError, KeyError, AttributeError):
                found = []
            return (None, found) if found else (text, [])
        reader = CallStream(self)
        reader.close(text)
        return reader.message()

    def header(self, body: str) -> tuple[Function | Custom, int] | bool:
        """How a `<tool_call>` block's ``body`` so far begins, as the grammar writes a call: (the tool, where its
        arguments or input begin) once its header is whole (`{"name": ..., "arguments": ` or `{"name": ...}` and a
        newline), True while it may still become one, False where it cannot."""
        lead = 1 if body.startswith("\n") else 0
        heads = [(tool, _head(tool)) for tool in self.callable]
        for tool, head in heads:
            if body.startswith(head, lead):
                return tool, lead + len(head)
        return any(head.startswith(body[lead:]) for _, head in heads)

    def lenient_call(self, body: str) -> dict | None:
        """The function call a `<tool_call>` block's ``body`` holds in JSON laid out otherwise than the grammar's
        (`parameters` for `arguments` too), None: none; its arguments compact."""
        try:
            value = json.loads(body)
        except ValueError:
            return None
        tool = self.tool(value.get("name")) if isinstance(value, dict) and isinstance(value.get("name"), str) else None
        if not isinstance(tool, Function) or tool not in self.callable:
            return None
        arguments = value.get("arguments", value.get("parameters", {}))
        return call(tool, compact(arguments)) if isinstance(arguments, dict) else None

    def system_note(self) -> str:
        """What a chat template that ignores tools gets in the system message."""
        listed = "\n".join(json.dumps(t.spec(), ensure_ascii=False) for t in self.listed)
        custom = any(isinstance(t, Custom) for t in self.listed)
        how = f"; a custom tool, {OPEN}{{\"name\": <its name>}}, a new line, then its input as text, then {CLOSE}"
        return (f"You can call functions. To call one, write {OPEN}{{\"name\": <its name>, \"arguments\": <its "
                f"arguments as a JSON object>}}{CLOSE}" + (how if custom else "")
                + f". The functions:\n<tools>\n{listed}\n</tools>")


def compact(value) -> str:
    """JSON as a held answer writes it: no free whitespace (`engine/grammar.py`'s layout)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def call(tool: Function | Custom, payload: str) -> dict:
    """One call in OpenAI's shape (its id made here): a function's arguments (JSON text), or a custom tool's input."""
    if isinstance(tool, Custom):
        return {"id": _call_id(), "type": "custom", "custom": {"name": tool.name, "input": payload}}
    return {"id": _call_id(), "type": "function", "function": {"name": tool.name, "arguments": payload}}


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _header(name: str) -> str:
    """A custom tool's call's first line, as its grammar holds it (`HERMES_LAYOUT`)."""
    return json.dumps({"name": name}, ensure_ascii=False)


def _head(tool: Function | Custom) -> str:
    """What a call to ``tool`` begins with, up to its arguments or input (`Tools.grammar`'s layout)."""
    return _header(tool.name) + "\n" if isinstance(tool, Custom) else _header(tool.name)[:-1] + ', "arguments": '


# ------------------------------------------------------------------------------------ the request
CHOICES = ("\"none\", \"auto\", \"required\", {\"type\": \"function\", \"function\": {\"name\": ...}}, {\"type\": "
           "\"custom\", \"custom\": {\"name\": ...}} or {\"type\": \"allowed_tools\", \"allowed_tools\": {\"mode\": "
           "\"auto\" or \"required\", \"tools\": [...]}}")


def parse_tools(body: dict) -> Tools | None:
    """A chat request's `tools`, `tool_choice` and `parallel_tool_calls` -> `Tools` (None: answer in text)."""
    tools, choice = body.get("tools") or [], body.get("tool_choice")
    parallel = True if body.get("parallel_tool_calls") is None else body["parallel_tool_calls"]
    if not isinstance(parallel, bool):
        raise ToolsError(f"'parallel_tool_calls' must be a boolean, got {parallel!r}", "parallel_tool_calls")
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        raise ToolsError(f"'tools' must be a list of at most {MAX_TOOLS} tools", "tools")
    listed = tuple(_tool(t, i) for i, t in enumerate(tools))
    if len({t.name for t in listed}) < len(listed):
        raise ToolsError("'tools' names a tool twice", "tools")
    name, allowed = _choice(choice, listed)
    if name == "none" or (name == "auto" and not listed):
        return None
    return Tools(listed, name, parallel, allowed)


def _tool(tool, i: int) -> Function | Custom:
    """``tools[i]``: a function, or a custom tool; each checked, its schema or grammar compiled once here."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    spec = tool.get(kind) if kind in ("function", "custom") else None
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not NAME.fullmatch(spec["name"]):
        raise ToolsError(f"tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}} or "
                         "{\"type\": \"custom\", \"custom\": {\"name\": ...}} with a name of 1-64 letters, digits, '_' "
                         "or '-'", "tools")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise ToolsError(f"tools[{i}].{kind}.description must be a string", "tools")
    if kind == "custom":
        return _custom(spec, description, i)
    parameters = spec.get("parameters", NO_PARAMETERS)
    if not isinstance(parameters, dict):
        raise ToolsError(f"tools[{i}].function.parameters must be a JSON schema (an object)", "tools")
    try:
        compile_schema(parameters or NO_PARAMETERS)
    except HamburgerError as e:
        raise ToolsError(f"tools[{i}].function.parameters: {e}", "tools") from e
    return Function(spec["name"], description, parameters or NO_PARAMETERS)


def _custom(spec: dict, description: str | None, i: int) -> Custom:
    """A custom tool, its `format` free text ({"type": "text"}, the default) or a grammar ({"type": "grammar",
    "grammar": {"syntax": "lark" or "regex", "definition": ...}})."""
    fmt = spec.get("format") or {"type": "text"}
    grammar = fmt.get("grammar") if isinstance(fmt, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "text":
        return Custom(spec["name"], description)
    if not isinstance(fmt, dict) or fmt.get("type") != "grammar" or not isinstance(grammar, dict) or \
            grammar.get("syntax") not in SYNTAX:
        raise ToolsError(f"tools[{i}].custom.format must be {{\"type\": \"text\"}} or {{\"type\": \"grammar\", "
                         "\"grammar\": {\"syntax\": \"lark\" or \"regex\", \"definition\": ...}}", "tools")
    try:
        tool = Custom(spec["name"], description, grammar["syntax"], grammar.get("definition"))
        compile_lark(tool.lark)
    except (HamburgerError, ValueError) as e:
        raise ToolsError(f"tools[{i}].custom.format: {e}", "tools") from e
    return tool


def _choice(choice, listed: tuple[Function | Custom, ...]) -> tuple[str, frozenset[str] | None]:
    """`tool_choice` -> ("none", "auto", "required" or a tool's name; the names a call may name, None: all)."""
    if choice is None:
        return ("auto" if listed else "none"), None
    if choice in ("none", "auto", "required"):
        if choice == "required" and not listed:
            raise ToolsError("'tool_choice' \"required\" needs 'tools'", "tool_choice")
        return choice, None
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "allowed_tools":
        spec = choice.get("allowed_tools")
        refs = spec.get("tools") if isinstance(spec, dict) else None
        if not isinstance(refs, list) or not refs or spec.get("mode") not in ("auto", "required"):
            raise ToolsError(f"'tool_choice' must be {CHOICES}, with one tool or more", "tool_choice")
        return spec["mode"], frozenset(_named(ref, listed) for ref in refs)
    return _named(choice, listed), None


def _named(ref, listed: tuple[Function | Custom, ...]) -> str:
    """The name of a tool ``ref`` names ({"type": "function" or "custom", <its type>: {"name": ...}}), among
    ``listed``."""
    kind = ref.get("type") if isinstance(ref, dict) else None
    name = ref.get(kind).get("name") if kind in ("function", "custom") and isinstance(ref.get(kind), dict) else None
    if not isinstance(name, str):
        raise ToolsError(f"'tool_choice' must be {CHOICES}", "tool_choice")
    tool = next((t for t in listed if t.name == name), None)
    if tool is None:
        raise ToolsError(f"'tool_choice' names {name!r}, which is not among 'tools'", "tool_choice")
    if (kind == "custom") != isinstance(tool, Custom):
        raise ToolsError(f"'tool_choice' names {name!r} as a {kind} tool; 'tools' lists it as another kind",
                         "tool_choice")
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
    names: dict = field(default_factory=dict)  # call id -> tool name (a result's `name`)

    @classmethod
    def of(cls, messages: list[dict], tools: Tools | None, tokenizer) -> "Conversation":
        """``messages``: OpenAI's, each checked (`_message`); the tools shown when a call may be made. Where the
        template ignores tools, results that follow one another make one user turn (templates that want roles to
        alternate take it), and the tools' note goes in the system message, or before the first message's text where
        the template takes none."""
        native = renders_tools(tokenizer)
        out = cls([], [t.spec() for t in tools.listed] if tools and native else None)
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
        self.names.update((c["id"], c[c["type"]]["name"]) for c in parsed)
        functions = [c for c in parsed if c["type"] == "function"] if native else []
        text = "".join(_written(c) for c in parsed if c not in functions)  # (templates know function calls only)
        return {"role": "assistant", "content": (content or "") + text, **({"tool_calls": functions} if functions
                                                                             else {})}


def _written(c: dict) -> str:
    """An earlier call as the answer writes it (`Tools.grammar`)."""
    if c["type"] == "custom":
        return f"{OPEN}{_header(c['custom']['name'])}\n{c['custom']['input']}{CLOSE}"
    return f"{OPEN}{json.dumps({'name': c['function']['name'], 'arguments': c['function']['arguments']})}{CLOSE}"


def _earlier_call(c, i: int) -> dict:
    """An assistant message's call: a function's, its arguments read from their JSON text (as the templates take
    them), or a custom tool's."""
    kind = c.get("type", "function") if isinstance(c, dict) else None
    spec = c.get(kind) if kind in ("function", "custom") else None
    payload = "input" if kind == "custom" else "arguments"
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or \
            not isinstance(spec.get(payload, "{}" if kind == "function" else None), str):
        raise ToolsError(f"messages[{i}].tool_calls holds a call that is not {{\"id\": ..., \"type\": \"function\", "
                         "\"function\": {\"name\": ..., \"arguments\": \"<JSON>\"}} or {\"id\": ..., \"type\": "
                         "\"custom\", \"custom\": {\"name\": ..., \"input\": ...}}", f"messages[{i}].tool_calls")
    identity = c.get("id") if isinstance(c.get("id"), str) else ""
    if kind == "custom":
        return {"id": identity, "type": "custom", "custom": {"name": spec["name"], "input": spec["input"]}}
    function = spec
    try:
        arguments = json.loads(function.get("arguments", "{}"))
    except ValueError:
        arguments = function["arguments"]
    return {"id": identity, "type": "function", "function": {"name": function["name"], "arguments": arguments}}


# ------------------------------------------------------------------------------------ streaming
@dataclass
class CallStream:
    """One answer's text, read as it comes, turned into deltas: a named tool's arguments or input go out as they come;
    a JSON array of calls ("required" with functions alone) is held back until the answer ends; `<tool_call>` blocks
    ("auto", and "required" with custom tools) are read as they are written: text outside them goes out as content
    (held while it may be the start of a marker, or while all of it is whitespace), and a call goes out once its
    header names a tool, its arguments or input then as they come (less what may be the call's end). A block written
    otherwise than the grammar writes one goes out whole when it ends: a call where `Tools.lenient_call` reads one,
    else content. The deltas add up to `message`, which `Tools.calls` reads the same way from the whole answer."""

    tools: Tools
    text: str = ""  # the answer so far
    sent: int = 0  # named: its characters sent as the call's arguments or input
    called: bool = False  # calls went out
    content: str = ""  # text outside the blocks read so far (`<tool_call>` blocks)
    shown: int = 0  # its characters sent
    found: list = field(default_factory=list)  # the calls so far (the last one's payload may grow)
    at: int = 0  # the answer's characters read
    block: int | None = None  # where the block being read begins (after its marker)
    payload: int | None = None  # where the call being written's arguments or input begin in the text

    def delta(self, text: str, end: bool = False) -> dict:
        """The delta of the answer's next ``text`` (``end``: the answer ends with it)."""
        self.text += text
        if self.tools.named:  # a named function's arguments, or a named custom tool's input
            self.sent, tool = len(self.text), self.tools.tool(self.tools.choice)
            if not self.called:
                self.called = True
                return {"tool_calls": [{"index": 0, **call(tool, self.text)}]}
            payload = {"custom": {"input": text}} if isinstance(tool, Custom) else {"function": {"arguments": text}}
            return {"tool_calls": [{"index": 0, **payload}]} if text else {}
        if not self.tools.hermes:  # (a JSON array of calls: read whole at the end)
            if not end:
                return {}
            content, calls = self.tools.calls(self.text)
            self.called = bool(calls)
            return {**({"content": content} if content else {}),
                    **({"tool_calls": [{"index": k, **c} for k, c in enumerate(calls)]} if calls else {})}
        before = [len(_payload(c)) for c in self.found]
        self._read(end)
        return self._changes(before, end)

    def close(self, text: str) -> dict:
        """The last delta, with the answer's last ``text``: what was held back, as content and calls."""
        return self.delta(text, end=True)

    def message(self) -> tuple[str | None, list[dict]]:
        """(The message's content, its calls) as read so far; content of whitespace alone beside calls is none."""
        return (self.content if self.content.strip() or not self.found else None), [dict(c) for c in self.found]

    def _read(self, end: bool) -> None:
        """Read the text on from `at` as far as it can be told apart: all of it at the ``end``."""
        while True:
            if self.block is None:
                start = self.text.find(OPEN, self.at)
                upto = start if start >= 0 else len(self.text) if end else max(self.at, _before_marker(self.text))
                self.content += self.text[self.at:upto]
                self.at = upto
                if start < 0:
                    return
                self.block = self.at = start + len(OPEN)
            body = self.text[self.block:]
            close = body.find(CLOSE)
            inner = body if close < 0 else body[:close]
            if self.payload is None:
                head = self.tools.header(inner)
                if head is True and close < 0 and not end:
                    return  # (it may still become a call)
                if head not in (True, False):
                    tool, begins = head
                    self.found.append(call(tool, ""))
                    self.payload = self.block + begins
            if self.payload is not None:
                self._grow(inner[self.payload - self.block:], close >= 0, end)
            if close < 0 and not end:
                return
            if self.payload is None:  # (a block written otherwise: a call, or text)
                one = self.tools.lenient_call(inner)
                if one is not None:
                    self.found.append(one)
                else:
                    self.content += OPEN + inner + (CLOSE if close >= 0 else "")
            self.at = self.block + len(inner) + (len(CLOSE) if close >= 0 else 0)
            self.block = self.payload = None
            if close < 0:
                return

    def _grow(self, body: str, closed: bool, end: bool) -> None:
        """The call being written's arguments or input: ``body``, its block's text after its header (up to the block's
        end where ``closed``), less what may still be the block's end while neither it nor the answer (``end``)
        ended."""
        last = self.found[-1]
        if not closed and not end:
            body = body[:_before_marker(body, CLOSE)]
        if last["type"] == "function":  # (the arguments' JSON, less the call's own "}" and newline after it)
            try:
                body = body[:_JSON.raw_decode(body)[1]]
            except ValueError:  # (not whole yet; or cut by the token limit: as far as they went)
                body = body if end and not closed else re.sub(r"\}?\n?\Z", "", body, count=1)
        last[last["type"]] = {**last[last["type"]], PAYLOAD[last["type"]]: body}

    def _changes(self, before: list[int], end: bool) -> dict:
        """The delta from ``before`` (each call's payload's length) to now: content not sent (once some of it is not
        whitespace, or at the ``end`` without calls), new calls and what their payloads grew by."""
        out, content = {}, self.message()[0] if end else (self.content if self.content.strip() else "")
        if content and len(content) > self.shown:
            out["content"], self.shown = content[self.shown:], len(content)
        deltas = []
        for k, c in enumerate(self.found):
            grown = _payload(c)[before[k]:] if k < len(before) else None
            if k >= len(before):
                deltas.append({"index": k, **c})
            elif grown:
                deltas.append({"index": k, c["type"]: {PAYLOAD[c["type"]]: grown}})
        self.called = bool(self.found)
        return {**out, **({"tool_calls": deltas} if deltas else {})}


PAYLOAD = {"function": "arguments", "custom": "input"}  # what a call of each kind carries


def _payload(c: dict) -> str:
    return c[c["type"]][PAYLOAD[c["type"]]]


def _before_marker(text: str, marker: str = OPEN) -> int:
    """Where a tail of ``text`` that may grow into ``marker`` begins (its length when none)."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:k]):
            return len(text) - k
    return len(text)
