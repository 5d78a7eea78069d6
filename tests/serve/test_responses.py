"""The Responses API's translation with no server (`serve/responses.py`): a request as the chat request that answers
it, a chat answer as a response object, and a streamed chat answer as the Responses stream's events."""

import json

import pytest

from hamburger.serve.protocol import APIError
from hamburger.serve.response_store import ResponseStore
from hamburger.serve.responses import ResponseEvents, answer_message, kept, response_body, to_chat

DIGIT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def asked(kept_in=None, **body):
    return to_chat(json.dumps(body).encode(), kept_in)


def chat_of(**body) -> dict:
    return asked(**body).chat


def test_a_request_becomes_the_chat_request_that_answers_it():
    assert chat_of(input="Hi", model="m", temperature=0.5, confidence=0.8) == {
        "model": "m", "temperature": 0.5, "confidence": 0.8, "messages": [{"role": "user", "content": "Hi"}]}
    chat = chat_of(instructions="Be brief.", max_output_tokens=9, stream=True, store=True, metadata={"k": "v"},
                   input=[{"role": "user", "content": [{"type": "input_text", "text": "A "},
                                                      {"type": "input_text", "text": "digit?"}]},
                          {"type": "function_call", "call_id": "c1", "name": "pick", "arguments": '{"n":1}'},
                          {"type": "function_call", "call_id": "c2", "name": "pick", "arguments": '{"n":2}'},
                          {"type": "function_call_output", "call_id": "c1", "output": "one"},
                          {"type": "function_call_output", "call_id": "c2", "output": "two"},
                          {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "Picked."}]}],
                   tools=[{"type": "function", "name": "pick", "parameters": DIGIT, "strict": True}],
                   tool_choice={"type": "function", "name": "pick"}, parallel_tool_calls=False,
                   text={"format": {"type": "json_schema", "name": "d", "schema": DIGIT, "strict": True}})
    assert chat == {
        "stream": True, "metadata": {"k": "v"}, "parallel_tool_calls": False, "max_tokens": 9,
        "messages": [
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": "A digit?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "pick", "arguments": '{"n":1}'}},
                {"id": "c2", "type": "function", "function": {"name": "pick", "arguments": '{"n":2}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "one"},
            {"role": "tool", "tool_call_id": "c2", "content": "two"},
            {"role": "assistant", "content": "Picked."}],
        "tools": [{"type": "function", "function": {"name": "pick", "parameters": DIGIT, "strict": True}}],
        "tool_choice": {"type": "function", "function": {"name": "pick"}},
        "response_format": {"type": "json_schema", "json_schema": {"name": "d", "schema": DIGIT, "strict": True}},
        "stream_options": {"include_usage": True}}
    assert chat_of(input="x", text={"format": {"type": "json_object"}})["response_format"] == {"type": "json_object"}
    answer = chat_of(input=[{"role": "assistant", "content": "Let me see."},
                            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}])["messages"]
    assert answer == [{"role": "assistant", "content": "Let me see.", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]
    assert chat_of(input="x", tool_choice="required", reasoning={}, include=[])["tool_choice"] == "required"
    # the text's log-probabilities: asked by `include`, or by `top_logprobs`; what this server never makes is no error
    for body, top in [({"include": ["message.output_text.logprobs"]}, 0), ({"top_logprobs": 3}, 3),
                      ({"include": ["reasoning.encrypted_content"]}, None)]:
        chat = chat_of(input="x", **body)
        assert (chat.get("logprobs"), chat.get("top_logprobs")) == ((True, top) if top is not None else (None, None))


@pytest.mark.parametrize("body, param", [
    ({"input": "x", "previous_response_id": "resp_1"}, "previous_response_id"),
    ({"input": "x", "background": True}, "background"),
    ({"input": "x", "reasoning": {"effort": "high"}}, "reasoning"),
    ({"input": "x", "messages": []}, "messages"),
    ({"input": "x", "n": 2}, "n"),
    ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
    ({"input": []}, "input"),
    ({"input": [{"type": "reasoning", "summary": []}]}, "input[0]"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]}, "input[0].content"),
    ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
    ({"input": "x", "tools": [{"type": "web_search"}]}, "tools"),
    ({"input": "x", "text": {"format": {"type": "yaml"}}}, "text.format"),
    ({"input": "x", "instructions": 3}, "instructions"),
    ({"input": "x", "include": "message.output_text.logprobs"}, "include"),
    ({"input": "x", "logprobs": True}, "logprobs"),
])
def test_what_it_cannot_take_is_refused(body, param):
    with pytest.raises(APIError) as e:
        to_chat(json.dumps(body).encode())
    assert e.value.status == 400 and e.value.param == param


def test_a_chat_error_names_the_responses_field():
    """A message's error names its input item (after instructions, and merged calls), or the instructions."""
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    translated = asked(instructions="I", input=[{"role": "user", "content": "x"}, call, call,
                                                {"role": "robot", "content": "y"}])
    assert len(translated.chat["messages"]) == 4
    def renamed(param):
        return translated.renamed(APIError(400, "x", param=param)).param
    assert renamed("messages[3].role") == "input[3].role" and renamed("messages[2]") == "input[1]"
    assert renamed("messages[0]") == "instructions" and renamed("messages") == "input"
    assert renamed("response_format") == "text.format" and renamed("temperature") == "temperature"
    assert to_chat(b'{"input": "x"}').renamed(APIError(400, "x", param="messages[0].content")).param == "input"


USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8, "prompt_tokens_details": {"cached_tokens": 2},
         "hamburger": {"tau": 1.5}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "pick", "arguments": '{"n":4}'}}


def completion(message: dict, finish: str = "stop") -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
            "usage": USAGE}


def test_a_chat_answer_as_a_response_object():
    request = {"input": "x", "max_output_tokens": 3, "tools": [{"type": "function", "name": "pick"}]}
    r = response_body("m", asked(**request), completion({"content": "Hello"}, "length"))
    assert r["object"] == "response" and r["id"].startswith("resp_") and r["model"] == "m"
    assert (r["status"], r["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert [(o["type"], o["status"], o["content"]) for o in r["output"]] == [
        ("message", "incomplete", [{"type": "output_text", "text": "Hello", "annotations": [], "logprobs": []}])]
    assert r["usage"] == {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 2}, "output_tokens": 3,
                          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 8,
                          "hamburger": {"tau": 1.5}}
    assert (r["max_output_tokens"], r["tools"], r["tool_choice"], r["text"], r["store"]) == (
        3, request["tools"], "auto", {"format": {"type": "text"}}, False)
    r = response_body("m", asked(**request), completion({"content": "Sure.", "tool_calls": [CALL]}, "tool_calls"))
    assert r["status"] == "completed" and r["incomplete_details"] is None
    assert [o["type"] for o in r["output"]] == ["message", "function_call"]
    call = r["output"][1]
    assert (call["call_id"], call["name"], call["arguments"], call["status"]) == ("call_1", "pick", '{"n":4}',
                                                                                  "completed")
    assert call["id"].startswith("fc_")
    assert [o["type"] for o in response_body("m", asked(**request), completion({"content": None,
                                                                                "tool_calls": [CALL]}))
            ["output"]] == ["function_call"]


def chunk(delta: dict | None = None, finish: str | None = None, logprobs: list | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish,
                         "logprobs": None if logprobs is None else {"content": logprobs}}], "usage": None}


def entry(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": []}


def test_the_texts_log_probabilities_go_with_it():
    """Chat's entries become the output text's: with its delta (those held back, with the next text; those after
    the last text, at its end), all of them in the done event and the final response, as the unstreamed answer holds
    them."""
    a, b, c = entry("He", -0.1), entry("llo", -0.2), entry("!", -0.3)
    events = ResponseEvents("m", asked(input="x"))
    out = [e for p in [chunk({"content": "He"}, logprobs=[a]), chunk({}, logprobs=[b]),
                       chunk({"content": "llo"}), chunk({"content": "!"}), chunk({}, "stop", [c]), "[DONE]"]
           for e in events.feed(p)]
    deltas = [e for e in out if e["type"] == "response.output_text.delta"]
    assert [d["logprobs"] for d in deltas] == [[a], [b], []]  # (the last one's came after its text)
    done = next(e for e in out if e["type"] == "response.output_text.done")
    assert done["logprobs"] == [a, b, c] == out[-1]["response"]["output"][0]["content"][0]["logprobs"]
    whole = completion({"content": "Hello!"})
    whole["choices"][0]["logprobs"] = {"content": [a, b, c], "refusal": None}
    assert response_body("m", asked(input="x"), whole)["output"][0]["content"][0]["logprobs"] == [a, b, c]


def test_a_streamed_answer_as_the_responses_events():
    """Text, then a named function's call as chat streams them: the events in order, numbered, their items adding up
    to the final response's."""
    events = ResponseEvents("m", asked(input="x"))
    payloads = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Let "}), chunk({"content": "me."}),
                chunk({"tool_calls": [{"index": 0, **CALL, "function": {"name": "pick", "arguments": '{"n"'}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": ":4}"}}]}), chunk({}, "tool_calls"),
                {"choices": [], "usage": USAGE}, "[DONE]"]
    out = events.start() + [e for p in payloads for e in events.feed(p)]
    assert [e["type"] for e in out] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
        "response.completed"]
    assert [e["sequence_number"] for e in out] == list(range(len(out)))
    assert out[0]["response"]["status"] == "in_progress" and out[0]["response"]["output"] == []
    assert out[2]["item"]["content"] == [] and out[2]["item"]["status"] == "in_progress"
    assert out[9]["item"]["arguments"] == "" and out[9]["item"]["status"] == "in_progress"
    final = out[-1]["response"]
    assert final["status"] == "completed" and final["usage"]["output_tokens"] == 3
    message, call = final["output"]
    assert message["content"][0]["text"] == "Let me." == out[6]["text"]
    assert (call["name"], call["arguments"], call["call_id"]) == ("pick", '{"n":4}', "call_1")
    assert out[12]["arguments"] == '{"n":4}' and out[9]["output_index"] == 1 == out[10]["output_index"]
    assert {e["item_id"] for e in out[3:8]} == {message["id"]}


def test_a_stream_cut_by_its_limit_or_failing():
    events = ResponseEvents("m", asked(input="x"))
    out = [e for p in [chunk({"content": "Hel"}), chunk({}, "length"), "[DONE]"] for e in events.feed(p)]
    assert out[-1]["type"] == "response.incomplete"
    assert out[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert out[-1]["response"]["output"][0]["status"] == "incomplete" == out[-2]["item"]["status"]
    assert out[-2]["type"] == "response.output_item.done"
    error = {"error": {"message": "boom", "type": "server_error", "param": None, "code": "internal_error"}}
    failed = ResponseEvents("m", asked(input="x")).feed(error)
    assert failed == [{"type": "error", "sequence_number": 0, "code": "internal_error", "message": "boom",
                       "param": None}]


# ------------------------------------------------------------------------------ kept responses
def test_a_kept_response_goes_on_with_its_conversation():
    """A kept response: its conversation (messages, not instructions, and its answer as the assistant's message) comes
    before the next request's input; errors in it name `previous_response_id`; `store` false keeps nothing."""
    store = ResponseStore()
    first = asked(store, instructions="Be brief.", input="A digit?")
    assert first.keep and first.history == [{"role": "user", "content": "A digit?"}]
    answer = completion({"content": "Let me.", "tool_calls": [CALL]}, "tool_calls")
    response = kept(store, first, response_body("m", first, answer))
    assert response["store"] is True and store.get(response["id"])[0] == response
    second = asked(store, instructions="Be kind.", previous_response_id=response["id"],
                   input=[{"type": "function_call_output", "call_id": "call_1", "output": "4"}])
    assert second.chat["messages"] == [
        {"role": "system", "content": "Be kind."}, {"role": "user", "content": "A digit?"},
        {"role": "assistant", "content": "Let me.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"}]
    assert second.origins == ["instructions", "previous_response_id", "previous_response_id", "input[0]"]
    assert set(second.chat) == {"messages"}
    assert second.renamed(APIError(400, "x", param="messages[2].content")).param == "previous_response_id"
    assert response_body("m", second, completion({"content": "ok"}))["previous_response_id"] == response["id"]
    unkept = asked(store, input="x", store=False)
    assert not unkept.keep and kept(store, unkept, response_body("m", unkept, completion({"content": "y"})))
    assert len(store) == 1 and not asked(None, input="x").keep
    for store_, code in [(store, "previous_response_not_found"), (None, "unsupported_parameter")]:
        with pytest.raises(APIError) as e:
            asked(store_, input="x", previous_response_id="resp_gone")
        assert (e.value.param, e.value.code) == ("previous_response_id", code)


def test_an_answer_as_the_assistants_message():
    text = {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    assert answer_message([text]) == {"role": "assistant", "content": "Hi"}
    assert answer_message([call]) == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    assert answer_message([]) == {"role": "assistant", "content": ""}
    custom = {"type": "custom_tool_call", "call_id": "d", "name": "g", "input": "a {b}"}
    assert answer_message([call, custom])["tool_calls"][1] == {"id": "d", "type": "custom",
                                                                "custom": {"name": "g", "input": "a {b}"}}


def test_custom_and_allowed_tools_become_chats():
    """A custom tool's fields (its grammar's beside the format's type) go under chat's "custom"; a custom tool
    choice and the allowed tools name theirs as chat does; custom calls and their outputs are chat's."""
    grammar = {"type": "grammar", "syntax": "regex", "definition": "[0-9]+"}
    chat = chat_of(input=[{"role": "user", "content": "Go"},
                          {"type": "custom_tool_call", "call_id": "c", "name": "digits", "input": "12"},
                          {"type": "custom_tool_call_output", "call_id": "c", "output": "ok"}],
                   tools=[{"type": "custom", "name": "digits", "description": "Digits", "format": grammar},
                          {"type": "custom", "name": "free", "format": {"type": "text"}},
                          {"type": "function", "name": "pick", "parameters": DIGIT}],
                   tool_choice={"type": "allowed_tools", "mode": "required", "tools": [
                       {"type": "custom", "name": "digits"}, {"type": "function", "name": "pick"}]})
    assert chat["tools"][:2] == [
        {"type": "custom", "custom": {"name": "digits", "description": "Digits", "format": {
            "type": "grammar", "grammar": {"syntax": "regex", "definition": "[0-9]+"}}}},
        {"type": "custom", "custom": {"name": "free", "format": {"type": "text"}}}]
    assert chat["tool_choice"] == {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "custom", "custom": {"name": "digits"}}, {"type": "function", "function": {"name": "pick"}}]}}
    assert chat["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "custom", "custom": {"name": "digits", "input": "12"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"}]
    assert chat_of(input="x", tool_choice={"type": "custom", "name": "digits"})["tool_choice"] == {
        "type": "custom", "custom": {"name": "digits"}}


def test_the_store_keeps_the_most_recently_used_within_its_bytes():
    store = ResponseStore(max_bytes=410)  # (each of the first three takes 136 bytes, the fourth 85)
    for k in range(3):
        store.add({"id": f"r{k}", "pad": "x" * 60}, [{"role": "user", "content": "y" * 20}])
    assert len(store) == 3 and store.bytes <= 410
    assert store.get("r0") is not None  # r0 is now the most recent: r1 goes first
    store.add({"id": "r3", "pad": "x" * 60}, [])
    assert store.get("r1") is None and store.get("r0") is not None and store.bytes <= 410
    store.add({"id": "r0", "pad": ""}, [])  # kept again under its id: replaced, counted once
    assert len(store) == 3 and store.delete("r0") and not store.delete("r0") and store.get("r0") is None
