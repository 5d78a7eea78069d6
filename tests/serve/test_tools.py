"""Function calling's pieces with no server (`serve/tools.py`): the request's tools, the schema an answer is held to,
the calls read from an answer, the deltas of a streamed one, and the conversation a chat template reads."""

import copy
import json

import pytest
import torch

from hamburger.engine.grammar import Grammar, compile_lark, compile_schema
from hamburger.engine.prompt import encode_prompt
from hamburger.serve.tools import CallStream, Conversation, Tools, ToolsError, parse_tools, renders_tools
from tests.helpers import CHAT_TEMPLATE

DIGIT = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"],
         "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "pick", "description": "Pick a digit", "parameters": DIGIT}},
         {"type": "function", "function": {"name": "now"}}]
# a template that shows tools and earlier calls, as Qwen's and Hermes' do (in short)
TOOL_TEMPLATE = ("{% if tools %}<s>tools: {% for t in tools %}{{ t['function']['name'] }} {% endfor %}\n{% endif %}"
                 "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}"
                 "{% for c in m.get('tool_calls', []) %}[{{ c['function']['name'] }} "
                 "{{ c['function']['arguments']['n'] }}]{% endfor %}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


def tools(choice=None, parallel=True, listed=TOOLS) -> Tools:
    return parse_tools({"tools": listed, "tool_choice": choice, "parallel_tool_calls": parallel})


def grammar_accepts(spec: dict | str, text: str, tokenizer) -> bool:
    """Whether an answer held to ``spec`` (a JSON schema, or a Lark grammar) may be ``text`` and end there (one
    character per token)."""
    compiled = compile_schema(spec) if isinstance(spec, dict) else compile_lark(spec)
    g = Grammar(compiled, tokenizer, len(tokenizer), [tokenizer.eos_token_id], torch.device("cpu"))
    for token in tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]:
        if not g.allowed()[token]:
            return False
        g.add(token)
    return True


# ------------------------------------------------------------------------------ the request
def test_the_choice_and_its_defaults():
    assert parse_tools({}) is None and parse_tools({"tools": [], "tool_choice": "auto"}) is None
    assert tools().choice == "auto" and tools("none") is None and tools("required").choice == "required"
    named = tools({"type": "function", "function": {"name": "pick"}})
    assert named.choice == "pick" and named.parallel
    assert [f.name for f in named.listed] == ["pick", "now"]
    assert named.tool("now").parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert not tools(parallel=False).parallel


@pytest.mark.parametrize("body, param, words", [
    ({"tools": {"a": 1}}, "tools", "must be a list"),
    ({"tools": [{"type": "function", "function": {"name": "bad name"}}]}, "tools", "1-64 letters"),
    ({"tools": [{"type": "retrieval"}]}, "tools", "\"type\": \"function\""),
    ({"tools": [TOOLS[0], TOOLS[0]]}, "tools", "twice"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "frob"}}}]}, "tools",
     "unusable JSON schema"),
    ({"tools": [{"type": "function", "function": {"name": "f", "description": 3}}]}, "tools", "description"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "gone"}}}, "tool_choice",
     "not among"),
    ({"tools": TOOLS, "tool_choice": "always"}, "tool_choice", "must be"),
    ({"tool_choice": "required"}, "tool_choice", "needs 'tools'"),
    ({"tools": TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls", "boolean"),
])
def test_malformed_tools_are_refused(body, param, words):
    with pytest.raises(ToolsError) as e:
        parse_tools(body)
    assert e.value.param == param and words in str(e.value)


def test_each_choice_holds_the_answer_to_its_calls(char_tokenizer):
    """A named function: its arguments; "required": an array of calls, one at most without parallel calls."""
    named = tools({"type": "function", "function": {"name": "pick"}}).schema()
    assert grammar_accepts(named, '{"n":4}', char_tokenizer)
    assert not grammar_accepts(named, '{"n":42}', char_tokenizer)
    required = tools("required").schema()
    two = '[{"name":"pick","arguments":{"n":1}},{"name":"now","arguments":{}}]'
    assert grammar_accepts(required, two, char_tokenizer)
    assert not grammar_accepts(required, "[]", char_tokenizer)
    assert not grammar_accepts(required, '[{"name":"gone","arguments":{}}]', char_tokenizer)
    assert not grammar_accepts(tools("required", parallel=False).schema(), two, char_tokenizer)
    assert grammar_accepts(tools("required", parallel=False).schema(), two[:two.index(",{")] + "]", char_tokenizer)
    assert tools().schema() is None


def test_auto_holds_each_call_it_begins(char_tokenizer):
    """"auto": any text, and each `<tool_call>` in it holds a call naming a tool, its arguments valid under the tool's
    schema, laid out as the templates show it; one call at most where several are not allowed."""
    auto = tools().grammar()
    one = '<tool_call>\n{"name": "pick", "arguments": {"n": 4}}\n</tool_call>'
    assert grammar_accepts(auto, "No call: just text, with <tags> and {braces}.", char_tokenizer)
    assert grammar_accepts(auto, "Let me see. " + one, char_tokenizer)
    assert grammar_accepts(auto, one + " and " + one.replace('"n": 4', '"n": 7') + " done", char_tokenizer)
    assert grammar_accepts(auto, '<tool_call>{"name": "now", "arguments": {}}</tool_call>', char_tokenizer)
    for wrong in (one.replace("pick", "gone"), one.replace('"n": 4', '"n": 42'), one.replace('": ', '":'),
                  one.replace("</tool_call>", ""), "text <tool_call> and more text",
                  '<tool_call>{"name": "pick"}</tool_call>'):
        assert not grammar_accepts(auto, wrong, char_tokenizer), wrong
    single = tools(parallel=False).grammar()
    assert grammar_accepts(single, one + " done", char_tokenizer)
    assert not grammar_accepts(single, one + one, char_tokenizer)
    named = tools({"type": "function", "function": {"name": "pick"}})
    assert tools("required").grammar() is None and named.grammar() is None and tools().schema() is None
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in tools().calls("See. " + one)[1]] == [
        ("pick", '{"n": 4}')]  # (as written)


# ------------------------------------------------------------------------------ the calls in an answer
def named_calls(calls):
    """Each call's (name, arguments), or (name, input) for a custom tool's."""
    return [(c[c["type"]]["name"], c[c["type"]]["arguments" if c["type"] == "function" else "input"]) for c in calls]


def test_auto_reads_hermes_calls_and_keeps_the_rest_as_content():
    auto = tools()
    text = 'Let me look.\n<tool_call>\n{"name": "pick", "arguments": {"n": 3}}\n</tool_call>\n' \
           '<tool_call>{"name": "now", "parameters": {}}</tool_call> then <tool_call>{"name": "gone"}</tool_call>' \
           '<tool_call>{oops}</tool_call><tool_call>{"name": "pick", "arguments": {"n": 5}}'
    content, calls = auto.calls(text)
    assert named_calls(calls) == [("pick", '{"n": 3}'), ("now", "{}"), ("pick", '{"n": 5}')]
    assert content == 'Let me look.\n\n then <tool_call>{"name": "gone"}</tool_call><tool_call>{oops}</tool_call>'
    assert all(c["id"].startswith("call_") and c["type"] == "function" for c in calls)
    assert len({c["id"] for c in calls}) == 3
    assert auto.calls("No call here.") == ("No call here.", [])
    cut = auto.calls('<tool_call>{"name": "pick", "arguments": {"n": {"m": 1}')  # (its token limit: as far as it went)
    assert named_calls(cut[1]) == [("pick", '{"n": {"m": 1}')]
    assert auto.calls('<tool_call>{"name": "now", "arguments": {}}</tool_call>\n')[0] is None


def test_required_and_named_calls():
    required = tools("required")
    content, calls = required.calls('[{"name":"pick","arguments":{"n":2}},{"name":"now","arguments":{}}]')
    assert content is None and named_calls(calls) == [("pick", '{"n":2}'), ("now", "{}")]
    cut = '[{"name":"pick","argu'
    assert required.calls(cut) == (cut, [])  # cut by its token limit: the text, no call
    named = tools({"type": "function", "function": {"name": "pick"}})
    assert named_calls(named.calls('{"n":7}')[1]) == [("pick", '{"n":7}')]
    assert named_calls(named.calls('{"n')[1]) == [("pick", '{"n')]  # cut: arguments as far as they went


@pytest.mark.parametrize("choice, text", [
    ("auto", "Sure: <tool_call>{\"name\": \"pick\", \"arguments\": {\"n\": 1}}</tool_call> done <tool"),
    ("auto", "  \n<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>"),
    ("auto", "<tool_cal is not a call, nor <tool_call>{bad}</tool_call>"),
    ("auto", "Plain text < with <tools"),
    ("required", '[{"name":"pick","arguments":{"n":2}}]'),
    ("pick", '{"n":7}'),
    ("auto+custom", 'Patch: <tool_call>{"name": "patch"}\n*** a\n{b}\n</tool_call> and <tool_call>{"name": "digits"}'
                    '\n42</tool_call>'),
    ("required+custom", '<tool_call>{"name": "digits"}\n7</tool_call>\n<tool_call>{"name": "pick", "arguments": '
                        '{"n": 1}}</tool_call>'),
    ("digits", "123"),
    ("auto", 'Hi <tool_call>\n{"name": "pick", "arguments": {"n": 1}}\n</tool_call>\n<tool_call>{"name": "now", '
             '"arguments": {}}</tool_call>\n'),
    ("auto", 'Cut <tool_call>{"name": "pick", "arguments": {"n": 1'),
    ("auto", 'Cut <tool_call>{"name": "pick", "arguments": {"n": 1}}\n</tool_'),
    ("auto", '<tool_call>{"name": "now", "parameters": {}}</tool_call> <tool_call>{bad}</tool_call> ok'),
    ("auto+custom", 'a <tool_call>{"name": "patch"}\nline </tool_c more\n</tool_call>'),
    ("auto+custom", '<tool_call>{"name": "patch"}\nhalf</tool'),
])
def test_streamed_deltas_add_up_to_the_message(choice, text):
    """However an answer's text comes in pieces, its deltas add up to the message read from the whole (so no content
    went out that became a call); in `<tool_call>` blocks, a call goes out as it is written."""
    if choice.endswith("+custom") or choice == "digits":
        spec = custom_tools(choice.split("+")[0] if "+" in choice else {"type": "custom", "custom": {"name": choice}})
    else:
        spec = tools(choice if choice in ("auto", "required") else {"type": "function", "function": {"name": choice}})
    content, calls = spec.calls(text)
    assert calls or choice == "auto"
    for cuts in ([], [1], [5, 6, 7], list(range(1, len(text)))):
        stream, deltas, at = CallStream(spec), [], 0
        for cut in cuts + [len(text)]:
            deltas.append(stream.delta(text[at:cut]))
            at = cut
        deltas.append(stream.close(""))
        got_content = "".join(d.get("content", "") for d in deltas)
        assert got_content == (content or "")
        if spec.hermes and len(cuts) > 3 and calls and "parameters" not in text:  # (a character at a time)
            first = next(k for k, d in enumerate(deltas) if d.get("tool_calls"))
            assert "</tool_call>" not in text[:cuts[first] if first < len(cuts) else len(text)]  # (before its end)
            assert sum(bool(d.get("tool_calls")) for d in deltas) > len(calls)  # (its arguments as they came)
        got = {}
        for d in deltas:
            for c in d.get("tool_calls", []):
                entry = got.setdefault(c["index"], {"name": "", "arguments": "", "type": c.get("type")})
                part = c[entry["type"]]  # (a call's later deltas under its type's key)
                entry["name"] += part.get("name", "")
                entry["arguments"] += part.get("arguments", part.get("input", ""))
        assert [(e["name"], e["arguments"]) for _, e in sorted(got.items())] == named_calls(calls)
        assert stream.called == bool(calls)


# ------------------------------------------------------------------------------ the conversation
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "A digit?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_7", "type": "function", "function": {"name": "pick", "arguments": '{"n": 4}'}}]},
    {"role": "tool", "tool_call_id": "call_7", "content": "4 picked"},
]


def test_a_template_that_ignores_tools_reads_them_in_the_system_message(char_tokenizer):
    tok = copy.deepcopy(char_tokenizer)
    tok.chat_template = CHAT_TEMPLATE
    assert not renders_tools(tok)
    spec = tools()
    conv = Conversation.of(CONVERSATION, spec, tok)
    assert conv.tools is None
    assert conv.messages[0] == {"role": "system", "content": "Be brief.\n\n" + spec.system_note()}
    assert '{"type": "function", "function": {"name": "pick", "description": "Pick a digit"' in spec.system_note()
    assert 'write <tool_call>{"name": <its name>, "arguments": <its arguments as a JSON object>}</tool_call>. The ' \
        in spec.system_note() and "custom" not in spec.system_note()  # (the layout the grammar holds a call to)
    assert 'a custom tool, <tool_call>{"name": <its name>}, a new line, then its input' in custom_tools().system_note()
    assert conv.messages[2] == {"role": "assistant",
                                "content": '<tool_call>{"name": "pick", "arguments": {"n": 4}}</tool_call>'}
    assert conv.messages[3] == {"role": "user", "content": "<tool_response>\n4 picked\n</tool_response>"}
    # without a system message the note is one; without tools, none
    assert Conversation.of(CONVERSATION[1:2], spec, tok).messages[0] == {"role": "system",
                                                                          "content": spec.system_note()}
    assert Conversation.of(CONVERSATION[1:2], None, tok).messages == CONVERSATION[1:2]


def test_a_template_without_system_messages_reads_the_tools_in_the_first(char_tokenizer):
    """A template that refuses a system message and wants roles to alternate (Gemma's, older Mistral's): the note
    begins the first user message, and results that follow one another make one user turn."""
    tok = copy.deepcopy(char_tokenizer)
    tok.chat_template = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system') }}"
                         "{% endif %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
                         "{{ raise_exception('alternate') }}{% endif %}<s>{{ m['role'] }}: {{ m['content'] }}"
                         "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
    spec = tools()
    two = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "pick", "arguments": '{"n": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}
    results = [{"role": "tool", "tool_call_id": "a", "content": "1"},
               {"role": "tool", "tool_call_id": "b", "content": "noon"}]
    conv = Conversation.of([{"role": "user", "content": "Go"}, two, *results], spec, tok)
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "user"]
    assert conv.messages[0]["content"] == spec.system_note() + "\n\nGo"
    assert conv.messages[2]["content"] == "<tool_response>\n1\n</tool_response>\n" \
                                          "<tool_response>\nnoon\n</tool_response>"
    assert encode_prompt(tok, conv.messages)  # the template takes it


def test_a_template_that_renders_tools_gets_them_and_earlier_calls(char_tokenizer):
    tok = copy.deepcopy(char_tokenizer)
    tok.chat_template = TOOL_TEMPLATE
    assert renders_tools(tok)
    conv = Conversation.of(CONVERSATION, tools(), tok)
    assert [t["function"]["name"] for t in conv.tools] == ["pick", "now"]
    assert conv.messages[0] == CONVERSATION[0]
    assert conv.messages[2]["tool_calls"][0]["function"] == {"name": "pick", "arguments": {"n": 4}}
    assert conv.messages[3] == {"role": "tool", "content": "4 picked", "tool_call_id": "call_7", "name": "pick"}
    text = tok.decode(encode_prompt(tok, conv.messages, tools=conv.tools))  # (its characters have no newline)
    assert text == "<s>tools: pick now <s>system: Be brief.<s>user: A digit?<s>assistant: [pick 4]<s>tool: 4 picked" \
                   "assistant:"
    assert Conversation.of(CONVERSATION, None, tok).tools is None  # "none": the tools are not shown


def test_malformed_earlier_calls_are_refused(char_tokenizer):
    tok = copy.deepcopy(char_tokenizer)
    tok.chat_template = CHAT_TEMPLATE
    for bad, words in [({"role": "tool", "content": "x"}, "tool_call_id"),
                       ({"role": "user", "content": "x", "tool_calls": [{"function": {"name": "f"}}]}, "assistant"),
                       ({"role": "assistant", "content": None, "tool_calls": [{"function": {"arguments": "{}"}}]},
                        "is not")]:
        with pytest.raises(ToolsError) as e:
            Conversation.of([{"role": "user", "content": "hi"}, bad], tools(), tok)
        assert words in str(e.value) and e.value.param.startswith("messages[1]")
    assert json.loads(tools().system_note().split("<tools>\n")[1].split("\n")[0])["function"]["name"] == "pick"


def test_a_model_not_taught_to_call_makes_one_call_at_most(char_tokenizer):
    """"required" with parallel calls allowed: one call at most where the template ignores tools (a model that was
    never taught to call repeats its call until its token limit), as many as the model likes where it renders them."""
    from hamburger.serve.protocol import prepare

    body = json.dumps({"messages": [{"role": "user", "content": "Go"}], "tools": TOOLS, "tool_choice": "required"})
    for template, most in [(CHAT_TEMPLATE, 1), (TOOL_TEMPLATE, None)]:
        tok = copy.deepcopy(char_tokenizer)
        tok.chat_template = template
        parsed = prepare(body.encode(), "chat", tok, 16, None)
        assert parsed.tools.parallel == (most is None) and parsed.config.json_schema.get("maxItems") == most


# ------------------------------------------------------------------------------ custom tools, allowed tools
DIGITS = {"type": "custom", "custom": {"name": "digits", "description": "Digits, comma-free",
                                       "format": {"type": "grammar", "grammar": {"syntax": "regex",
                                                                                 "definition": "[0-9]+"}}}}
PATCH = {"type": "custom", "custom": {"name": "patch"}}  # free text
SUM = {"type": "custom", "custom": {"name": "sum", "format": {"type": "grammar", "grammar": {
    "syntax": "lark", "definition": 'start: NUM ("+" NUM)*\nNUM: /[0-9]+/'}}}}
CUSTOM_TOOLS = TOOLS + [DIGITS, PATCH, SUM]


def custom_tools(choice=None, parallel=True) -> Tools:
    return parse_tools({"tools": CUSTOM_TOOLS, "tool_choice": choice, "parallel_tool_calls": parallel})


def custom_call(name: str, text: str) -> str:
    return f'<tool_call>{{"name": "{name}"}}\n{text}</tool_call>'


@pytest.mark.parametrize("tool, words", [
    ({"type": "custom", "custom": {"name": "x", "format": {"type": "json"}}}, "custom.format must be"),
    ({"type": "custom", "custom": {"name": "x", "format": {"type": "grammar", "grammar": {"syntax": "ebnf",
                                                                                         "definition": "a"}}}},
     "custom.format must be"),
    ({"type": "custom", "custom": {"name": "x", "format": {"type": "grammar", "grammar": {"syntax": "lark",
                                                                                         "definition": "start: ("}}}},
     "tools[0].custom.format"),
    ({"type": "custom", "custom": {"name": "x", "format": {"type": "grammar", "grammar": {"syntax": "regex",
                                                                                         "definition": ""}}}},
     "non-empty string"),
    ({"type": "custom", "custom": {"name": "x y"}}, "1-64 letters"),
    ({"type": "custom", "custom": {"name": "x", "description": ["d"]}}, "custom.description"),
])
def test_malformed_custom_tools_are_refused(tool, words):
    with pytest.raises(ToolsError) as e:
        parse_tools({"tools": [tool]})
    assert e.value.param == "tools" and words in str(e.value)


@pytest.mark.parametrize("choice, words", [
    ({"type": "custom", "custom": {"name": "pick"}}, "as a custom tool"),
    ({"type": "function", "function": {"name": "digits"}}, "as a function tool"),
    ({"type": "custom", "custom": {"name": "gone"}}, "not among"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}, "one tool or more"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "sometimes", "tools": [DIGITS]}}, "one tool or more"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "custom",
                                                                            "custom": {"name": "gone"}}]}},
     "not among"),
])
def test_malformed_choices_of_custom_and_allowed_tools_are_refused(choice, words):
    with pytest.raises(ToolsError) as e:
        custom_tools(choice)
    assert e.value.param == "tool_choice" and words in str(e.value)
    with pytest.raises(ToolsError, match="twice"):
        parse_tools({"tools": [TOOLS[0], {"type": "custom", "custom": {"name": "pick"}}]})


def test_a_named_custom_tool_holds_its_input_to_its_format(char_tokenizer):
    """Its input is the whole answer, held to its regex or Lark grammar, or free text; the call carries it as is."""
    for name, good, bad in [("digits", "2024", "20 24"), ("sum", "1+22+3", "1++2")]:
        spec = custom_tools({"type": "custom", "custom": {"name": name}})
        assert spec.schema() is None and spec.named
        assert grammar_accepts(spec.grammar(), good, char_tokenizer)
        assert not grammar_accepts(spec.grammar(), bad, char_tokenizer)
        content, calls = spec.calls(good)
        assert content is None and calls[0]["type"] == "custom" and calls[0]["custom"] == {"name": name,
                                                                                           "input": good}
    free = custom_tools({"type": "custom", "custom": {"name": "patch"}})
    assert free.grammar() is None and free.schema() is None
    assert named_calls(free.calls("any {text}\n")[1]) == [("patch", "any {text}\n")]


def test_auto_holds_each_custom_call_to_its_format(char_tokenizer):
    """A custom call: `{"name": ...}`, a newline, the input as it is (held to its format), then `</tool_call>`."""
    auto = custom_tools().grammar()
    function = '<tool_call>{"name": "pick", "arguments": {"n": 4}}</tool_call>'
    free = custom_call("patch", '*** Begin\n{"a": 1} <b> \\ "q"\n')
    for good in ("Just text.", "See " + custom_call("digits", "42") + " and " + custom_call("sum", "1+2"),
                 free + " then " + function, custom_call("patch", "")):
        assert grammar_accepts(auto, good, char_tokenizer), good
    for bad in (custom_call("digits", "4 2"), custom_call("sum", "1+"), custom_call("gone", "x"),
                '<tool_call>{"name": "digits", "arguments": {}}</tool_call>', custom_call("digits", "42")[:-1],
                '<tool_call>{"name": "digits"}42</tool_call>'):
        assert not grammar_accepts(auto, bad, char_tokenizer), bad
    assert not grammar_accepts(custom_tools(parallel=False).grammar(), free + free, char_tokenizer)
    # a line-based input (as an edit tool's): its lines' free text ends at each newline, the last newline optional
    edit = {"type": "custom", "custom": {"name": "edit", "format": {"type": "grammar", "grammar": {
        "syntax": "lark", "definition": 'start: "BEGIN" LF op+ "END" LF?\nop: ("+" | "-") /.*/ LF\n'
                                        '%import common.LF'}}}}
    lines = parse_tools({"tools": [edit]}).grammar()
    for end in ("END\n", "END"):
        answer = "Ok " + custom_call("edit", "BEGIN\n+a <b>\n-c\n" + end) + " done"
        assert grammar_accepts(lines, answer, char_tokenizer)
    assert not grammar_accepts(lines, custom_call("edit", "BEGIN\nc\nEND"), char_tokenizer)
    content, calls = custom_tools().calls("See " + free + " then " + function + custom_call("digits", "42"))
    assert content == "See  then " and named_calls(calls) == [
        ("patch", '*** Begin\n{"a": 1} <b> \\ "q"\n'), ("pick", '{"n": 4}'), ("digits", "42")]
    assert [c["type"] for c in calls] == ["custom", "function", "custom"]
    # cut by its token limit (finish reason "length"): a call whose header was written, its input as far as it went
    cut = "See " + custom_call("patch", "half")[:-3]
    assert named_calls(custom_tools().calls(cut)[1]) == [("patch", "half</tool_ca")]
    assert custom_tools().calls('See <tool_call>{"name": "pat') == ('See <tool_call>{"name": "pat', [])


def test_required_with_custom_tools_is_calls_alone(char_tokenizer):
    required = custom_tools("required")
    assert required.hermes and required.schema() is None
    two = custom_call("digits", "7") + "\n" + '<tool_call>{"name": "now", "arguments": {}}</tool_call>'
    assert grammar_accepts(required.grammar(), two, char_tokenizer)
    for bad in ("", "Hi " + two, two + " bye"):
        assert not grammar_accepts(required.grammar(), bad, char_tokenizer), bad
    assert not grammar_accepts(custom_tools("required", parallel=False).grammar(), two, char_tokenizer)
    content, calls = required.calls(two)
    assert content is None and named_calls(calls) == [("digits", "7"), ("now", "{}")]


def test_allowed_tools_are_the_only_ones_called(char_tokenizer):
    """`allowed_tools`: every tool is shown, calls name the allowed ones only (a JSON array of functions' calls
    where all allowed are functions)."""
    def allowed(mode, *names):
        refs = [{"type": t["type"], t["type"]: {"name": t[t["type"]]["name"]}} for t in CUSTOM_TOOLS
                if t[t["type"]]["name"] in names]
        return custom_tools({"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": refs}})

    only_now = allowed("required", "now")
    assert only_now.choice == "required" and not only_now.hermes and len(only_now.listed) == 5
    assert grammar_accepts(only_now.schema(), '[{"name":"now","arguments":{}}]', char_tokenizer)
    assert not grammar_accepts(only_now.schema(), '[{"name":"pick","arguments":{"n":1}}]', char_tokenizer)
    auto = allowed("auto", "digits", "pick")
    one = '<tool_call>{"name": "pick", "arguments": {"n": 4}}</tool_call>'
    assert grammar_accepts(auto.grammar(), "a " + one + custom_call("digits", "1"), char_tokenizer)
    for bad in (custom_call("patch", "x"), '<tool_call>{"name": "now", "arguments": {}}</tool_call>'):
        assert not grammar_accepts(auto.grammar(), bad, char_tokenizer)
        assert auto.calls(bad) == (bad, [])  # (text that names another tool is no call)
    assert "patch" in auto.system_note() and "now" in auto.system_note()


def test_earlier_custom_calls_are_written_as_the_answer_writes_them(char_tokenizer):
    """A custom call in the conversation: as text in the layout its grammar holds (templates know function calls
    only); its result names it."""
    earlier = [{"role": "user", "content": "Go"},
               {"role": "assistant", "content": "Here.", "tool_calls": [
                   {"id": "c1", "type": "custom", "custom": {"name": "digits", "input": "12"}},
                   {"id": "c2", "type": "function", "function": {"name": "pick", "arguments": '{"n": 4}'}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    for template in (CHAT_TEMPLATE, TOOL_TEMPLATE):
        tok = copy.deepcopy(char_tokenizer)
        tok.chat_template = template
        conv = Conversation.of(earlier, custom_tools(), tok)
        answer = conv.messages[-2]
        if template == TOOL_TEMPLATE:
            assert answer["content"] == "Here." + custom_call("digits", "12")
            assert [c["function"]["name"] for c in answer["tool_calls"]] == ["pick"]
            assert conv.messages[-1]["name"] == "digits"
            assert [t["function"]["name"] for t in conv.tools] == ["pick", "now", "digits", "patch", "sum"]
        else:
            assert answer["content"] == "Here." + custom_call("digits", "12") + \
                '<tool_call>{"name": "pick", "arguments": {"n": 4}}</tool_call>'
        assert encode_prompt(tok, conv.messages, tools=conv.tools)
    with pytest.raises(ToolsError, match="is not"):
        Conversation.of([{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "custom", "custom": {"name": "digits"}}]}], custom_tools(), char_tokenizer)
