"""`hamburger serve`'s OpenAI shapes and request lifecycle, with no server: the exact JSON the clients read."""

import asyncio
import json
import math

import pytest

from hamburger.engine.generate import GenerationResult, GroupEvent
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyResult
from hamburger.errors import HamburgerError
from hamburger.serve import lifecycle
from hamburger.serve.protocol import (FINISH, APIError, Chunks, Echo, Parsed, StreamedAnswer, TokenLogprobs, authorize,
                                      completion_body, completion_id, error_body, internal_error, model_card,
                                      model_list, parse_logprobs, prepare, shutting_down, sse, usage)
from hamburger.serve.scheduler import QueueFull, ShuttingDown


def result(text="hello world", finish="eos", cls=GenerationResult, **kw) -> GenerationResult:
    fields = dict(token_ids=[5, 6, 7], groups=[2, 1], tokens=3, forwards=2, tau=1.23456, prompt_tokens=4, kv_slots=5,
                  kv_slots_ordinary=6, kv_bytes=640, kv_bytes_ordinary=768, prefill_s=0.1, decode_s=0.2,
                  decode_tok_s=10.0, confidence=0.5)
    return cls(text=text, finish_reason=finish, **{**fields, **kw})


def event(text: str) -> GroupEvent:
    return GroupEvent(row=0, token_ids=[1], text=text, p_continue=[0.5], token_probs=[0.9])


# ------------------------------------------------------------------------------ shapes
def test_usage_counts_and_the_hamburger_extension():
    assert usage(result()) == {
        "prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7, "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 0,
                                      "rejected_prediction_tokens": 0},
        "hamburger": {"base_forwards": 2, "tau": 1.2346, "groups": 2, "kv_slots": 5, "kv_slots_ordinary": 6,
                      "kv_bytes": 640, "rereads": 0, "confidence": 0.5, "mode": "hamburger"}}
    # a prompt cache's tokens: each prompt's once, as its tokens (two prompts of two answers)
    answers = [result(cached_tokens=c) for c in (3, 3, 2, 2)]
    assert usage(answers, n=2)["prompt_tokens_details"] == {"cached_tokens": 5}
    assert usage(result(cls=VerifyResult))["hamburger"]["mode"] == "verify"
    assert usage(result(cls=VerifyResult, folded=True))["hamburger"]["mode"] == "verify_fold"


def test_finish_reasons_are_openai_ones():
    assert FINISH == {"eos": "stop", "stop": "stop", "length": "length", "cancelled": "length"}


def test_sse_framing():
    assert sse("[DONE]") == "data: [DONE]\n\n"
    assert sse({"a": [1, None]}) == 'data: {"a": [1, null]}\n\n'


def test_error_bodies():
    assert error_body("no", "server_error", "x", "c") == {"error": {"message": "no", "type": "server_error",
                                                                    "param": "x", "code": "c"}}
    e = APIError(429, "busy", "rate_limit_error", code="queue_full", headers={"Retry-After": "1"})
    assert e.body() == error_body("busy", "rate_limit_error", None, "queue_full") and e.headers == {"Retry-After": "1"}
    down = shutting_down("bye")
    assert down.status == 503 and down.body()["error"] == {"message": "bye", "type": "server_error", "param": None,
                                                           "code": "shutting_down"}
    boom = internal_error(ValueError("boom"))
    assert boom.status == 500 and boom.body()["error"]["message"] == "internal error: ValueError: boom"
    assert boom.body()["error"]["code"] == "internal_error"


def test_authorize():
    authorize({}, None)  # no key: anything goes
    authorize({"authorization": "Bearer sk-1"}, "sk-1")
    authorize({"authorization": "bearer  sk-1 "}, "sk-1")
    for headers, message in [({}, "Missing"), ({"authorization": "sk-1"}, "Missing"),
                             ({"authorization": "Bearer sk-2"}, "Incorrect")]:
        with pytest.raises(APIError) as e:
            authorize(headers, "sk-1")
        assert e.value.status == 401 and e.value.code == "invalid_api_key" and message in e.value.message


def test_completion_bodies():
    chat = completion_body("chat", "chatcmpl-1", "m", result(finish="stop"))
    assert isinstance(chat.pop("created"), int)
    assert chat == {"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "usage": usage(result()),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello world"},
                                 "logprobs": None, "finish_reason": "stop", "stop_reason": None}]}
    text = completion_body("completion", "cmpl-1", "m", result(finish="cancelled"))
    assert text["object"] == "text_completion"
    assert text["choices"] == [{"index": 0, "text": "hello world", "logprobs": None, "finish_reason": "length",
                                "stop_reason": None}]
    assert completion_id("chat").startswith("chatcmpl-") and completion_id("completion").startswith("cmpl-")
    assert completion_id("chat") != completion_id("chat")


def without_created(chunk):
    if isinstance(chunk, dict):
        assert isinstance(chunk.pop("created"), int)
    return chunk


def test_chat_chunks():
    c = Chunks("chat", "chatcmpl-1", "m")
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    assert without_created(c.role()) == {**head, "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]}
    assert without_created(c.text("he")) == {**head, "choices": [
        {"index": 0, "delta": {"content": "he"}, "logprobs": None, "finish_reason": None}]}
    final = without_created(StreamedAnswer(c, shown=len("hello world")).finish(result()))
    assert final == {**head, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop",
                                          "stop_reason": None}]}
    assert c.close([result()]) == ["[DONE]"]
    final = without_created(StreamedAnswer(c, shown=5).finish(result()))  # text held back (a stop string) comes last
    assert final["choices"][0]["delta"] == {"content": " world"}


def test_completion_chunks_with_usage():
    c = Chunks("completion", "cmpl-1", "m", include_usage=True)
    head = {"id": "cmpl-1", "object": "text_completion", "model": "m"}
    assert without_created(c.text("he")) == {**head, "usage": None, "choices": [
        {"index": 0, "text": "he", "logprobs": None, "finish_reason": None}]}
    final, use, done = [without_created(x) for x in
                        [StreamedAnswer(c, shown=11).finish(result(finish="length")), *c.close([result()])]]
    assert final == {**head, "usage": None, "choices": [
        {"index": 0, "text": "", "logprobs": None, "finish_reason": "length", "stop_reason": None}]}
    assert use == {**head, "choices": [], "usage": usage(result())} and done == "[DONE]"


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


@pytest.mark.parametrize("kind,body,expected", [
    ("chat", {}, None), ("chat", {"logprobs": False}, None), ("chat", {"logprobs": True}, 0),
    ("chat", {"logprobs": True, "top_logprobs": 20}, 20), ("chat", {"logprobs": False, "top_logprobs": 0}, None),
    ("completion", {}, None), ("completion", {"logprobs": 0}, 0), ("completion", {"logprobs": 5}, 5)])
def test_logprobs_requests(kind, body, expected):
    assert parse_logprobs(body, kind) == expected


@pytest.mark.parametrize("kind,body,param", [
    ("chat", {"logprobs": 1}, "logprobs"), ("chat", {"top_logprobs": 2}, "top_logprobs"),
    ("chat", {"logprobs": True, "top_logprobs": 21}, "top_logprobs"), ("completion", {"logprobs": 6}, "logprobs"),
    ("completion", {"logprobs": True}, "logprobs"), ("completion", {"top_logprobs": 1}, "top_logprobs")])
def test_logprobs_refusals(kind, body, param, char_tokenizer):
    raw = json.dumps({**body, **({"messages": [{"role": "user", "content": "hi"}]} if kind == "chat" else
                                 {"prompt": "hi"})}).encode()
    with pytest.raises(APIError) as e:
        prepare(raw, kind, char_tokenizer, 8, None)
    assert e.value.status == 400 and e.value.param == param


def test_a_logprobs_request_asks_the_engine_for_its_alternatives(char_tokenizer):
    raw = json.dumps({"prompt": "hi", "logprobs": 3}).encode()
    parsed = prepare(raw, "completion", char_tokenizer, 8, None)
    assert parsed.logprobs == 3 and parsed.config.top_logprobs == 3


def test_logprobs_shapes(char_tokenizer):
    """Chat's `logprobs.content` and the completions API's object, from a result's probabilities and alternatives
    (a probability of 0 is written as -9999, JSON having no -Infinity)."""
    a, b, c = ids(char_tokenizer, "abc")
    res = result(text="ab", token_ids=[a, b], tokens=2, token_probs=[0.5, 0.0],
                 alternatives=[[(a, math.log(0.5)), (c, math.log(0.25))], [(c, -0.1), (a, -3.0)]])
    chat = TokenLogprobs("chat", char_tokenizer, 1).of_result(res)
    assert chat == {"refusal": None, "content": [
        {"token": "a", "logprob": math.log(0.5), "bytes": [97], "top_logprobs": [
            {"token": "a", "logprob": math.log(0.5), "bytes": [97]}]},
        {"token": "b", "logprob": -9999.0, "bytes": [98], "top_logprobs": [
            {"token": "c", "logprob": -0.1, "bytes": [99]}]}]}
    legacy = TokenLogprobs("completion", char_tokenizer, 2).render(res.token_ids, res.token_probs, res.alternatives,
                                                                 offset=3)
    assert legacy == {"tokens": ["a", "b"], "token_logprobs": [math.log(0.5), -9999.0],
                      "top_logprobs": [{"a": math.log(0.5), "c": math.log(0.25)}, {"c": -0.1, "a": -3.0, "b": -9999.0}],
                      "text_offset": [3, 4]}
    none = TokenLogprobs("completion", char_tokenizer, 0).render(res.token_ids, res.token_probs, [])
    assert none["top_logprobs"] == [{"a": math.log(0.5)}, {"b": -9999.0}]  # (only the chosen token)


def test_logprobs_end_where_a_stop_string_cut_the_text(char_tokenizer):
    tokens = ids(char_tokenizer, "ab. cd")
    res = result(text="ab", token_ids=tokens, tokens=len(tokens), token_probs=[0.5] * len(tokens), finish="stop")
    assert TokenLogprobs("completion", char_tokenizer, 0).of_result(res)["tokens"] == ["a", "b"]
    res = result(text="", token_ids=tokens, tokens=len(tokens), token_probs=[0.5] * len(tokens), finish="stop")
    assert TokenLogprobs("chat", char_tokenizer, 0).of_result(res)["content"] == []
    res = result(text="ab. cd", token_ids=tokens, tokens=len(tokens), token_probs=[0.5] * len(tokens), finish="length")
    assert len(TokenLogprobs("chat", char_tokenizer, 0).of_result(res)["content"]) == len(tokens)


def test_echoed_logprobs_begin_with_the_prompts(char_tokenizer):
    """`echo`: the prompt's tokens first, the first with null log-probability and alternatives, offsets over both."""
    a, b, c = ids(char_tokenizer, "abc")
    res = result(text="c", token_ids=[c], tokens=1, token_probs=[0.5], alternatives=[[(c, -0.6)]],
                 prompt_logprobs=[-1.5], prompt_alternatives=[[(a, -0.2)]])
    legacy = TokenLogprobs("completion", char_tokenizer, 1).of_result(res, prompt_ids=[a, b])
    assert legacy == {"tokens": ["a", "b", "c"], "token_logprobs": [None, -1.5, math.log(0.5)],
                      "top_logprobs": [None, {"a": -0.2, "b": -1.5}, {"c": -0.6}], "text_offset": [0, 1, 2]}
    body = completion_body("completion", "cmpl-1", "m", res, TokenLogprobs("completion", char_tokenizer, 1),
                           [Echo("ab", [a, b])])
    assert body["choices"][0]["text"] == "abc" and body["choices"][0]["logprobs"] == legacy


@pytest.mark.parametrize("body,param", [({"echo": 1}, "echo"), ({"echo": "yes"}, "echo")])
def test_echo_refusals(body, param, char_tokenizer):
    with pytest.raises(APIError) as e:
        prepare(json.dumps({"prompt": "hi", **body}).encode(), "completion", char_tokenizer, 8, None)
    assert e.value.status == 400 and e.value.param == param


def test_a_streamed_echo_begins_with_the_prompt(char_tokenizer):
    """Streamed, the first chunk of an echoed answer carries the prompt's text and log-probabilities before the first
    group's: the chunks add up to the unstreamed answer."""
    a, b, c = ids(char_tokenizer, "abc")
    lp = TokenLogprobs("completion", char_tokenizer, 1)
    answer = StreamedAnswer(Chunks("completion", "x", "m", logprobs=lp), echo=Echo("ab", [a, b]))
    first = GroupEvent(row=0, token_ids=[c], text="c", p_continue=[0.5], token_probs=[0.5], finish_reason="length",
                       alternatives=[[(c, -0.6)]], prompt_logprobs=[-1.5], prompt_alternatives=[[(a, -0.2)]])
    chunk = answer.group(first)["choices"][0]
    res = result(text="c", token_ids=[c], tokens=1, token_probs=[0.5], alternatives=[[(c, -0.6)]],
                 prompt_logprobs=[-1.5], prompt_alternatives=[[(a, -0.2)]], finish="length")
    assert chunk["text"] == "abc" and chunk["logprobs"] == lp.of_result(res, prompt_ids=[a, b])
    assert answer.finish(res)["choices"][0]["text"] == ""


def test_an_echo_with_logprobs_asks_the_engine_for_the_prompts(char_tokenizer):
    parsed = prepare(json.dumps({"prompt": [5, 6], "echo": True, "logprobs": 2}).encode(), "completion",
                     char_tokenizer, 8, None)
    assert parsed.config.prompt_logprobs == 2 and parsed.echo == [Echo(char_tokenizer.decode([5, 6]), [5, 6])]
    plain = prepare(json.dumps({"prompt": "hi", "echo": True}).encode(), "completion", char_tokenizer, 8, None)
    assert plain.config.prompt_logprobs is None and plain.echo[0].text == "hi"


def test_group_chunks_carry_their_tokens_logprobs(char_tokenizer):
    (a,) = ids(char_tokenizer, "a")
    group = GroupEvent(row=0, token_ids=[a], text="a", p_continue=[0.5], token_probs=[0.5], alternatives=[[(a, -0.7)]])
    plain = without_created(StreamedAnswer(Chunks("chat", "chatcmpl-1", "m")).group(group))
    assert plain["choices"][0]["logprobs"] is None and plain["choices"][0]["delta"] == {"content": "a"}
    answer = StreamedAnswer(Chunks("completion", "cmpl-1", "m", logprobs=TokenLogprobs("completion", char_tokenizer,
                                                                                        1)))
    first, second = [without_created(answer.group(group)) for _ in range(2)]
    assert first["choices"][0]["logprobs"] == {"tokens": ["a"], "token_logprobs": [math.log(0.5)],
                                               "top_logprobs": [{"a": -0.7}], "text_offset": [0]}
    assert second["choices"][0]["logprobs"]["text_offset"] == [1]


def event_of(tokenizer, text: str, shown: str, finish: str | None = None) -> GroupEvent:
    tokens = ids(tokenizer, text)
    return GroupEvent(row=0, token_ids=tokens, text=shown, p_continue=[0.5] * len(tokens),
                      token_probs=[0.5] * len(tokens), finish_reason=finish, alternatives=[[]] * len(tokens))


@pytest.mark.parametrize("kind", ["chat", "completion"])
def test_streamed_logprobs_go_with_their_text_and_end_at_a_stop_cut(kind, char_tokenizer):
    """A token whose text is held back (a possible stop string) sends its log-probability with the chunk that shows
    it; a stop string's cut ends them; the chunks carry exactly the non-streamed answer's tokens."""
    logprobs = TokenLogprobs(kind, char_tokenizer, 0)
    answer = StreamedAnswer(Chunks(kind, "x", "m", logprobs=logprobs))
    events = [event_of(char_tokenizer, "ab w", "ab "),  # "w" may begin the stop string "wx": held back
              event_of(char_tokenizer, "o", "wo"),  # "wo" can no longer begin it: shown
              event_of(char_tokenizer, "rwxyz", "r", "stop")]  # cut before "wx"
    sent = [answer.group(e)["choices"][0]["logprobs"] for e in events]
    res = result(text="ab wor", token_ids=[t for e in events for t in e.token_ids], tokens=10, finish="stop",
                 token_probs=[0.5] * 10, alternatives=[[]] * 10)
    assert answer.finish(res)["choices"][0]["logprobs"] is None
    tokens = (lambda lp: [c["token"] for c in lp["content"]]) if kind == "chat" else (lambda lp: lp["tokens"])
    assert [tokens(lp) for lp in sent] == [["a", "b", " "], ["w", "o"], ["r"]]
    assert sum(map(tokens, sent), []) == tokens(logprobs.of_result(res))
    if kind == "completion":
        assert [lp["text_offset"] for lp in sent] == [[0, 1, 2], [3, 4], [5]]


def test_model_cards():
    assert model_card("m", 7, 2048) == {"id": "m", "object": "model", "created": 7, "owned_by": "hamburger",
                                        "max_model_len": 2048}
    assert model_list("m", 7, 2048) == {"object": "list", "data": [model_card("m", 7, 2048)]}


# ------------------------------------------------------------------------------ lifecycle
class FakeScheduler:
    def __init__(self, refuse: Exception | None = None):
        self.refuse, self.submitted, self.cancelled = refuse, [], []

    def submit(self, req):
        if self.refuse:
            raise self.refuse
        self.submitted.append(req)

    def cancel(self, req):
        self.cancelled.append(req)


def test_submit_refusals():
    async def go(scheduler, ids=(1, 2)):
        return lifecycle.submit(scheduler, list(ids), None, "verify", context_length=3)

    s = FakeScheduler()
    req = asyncio.run(go(s))
    assert s.submitted == [req] and req.mode == "verify" and req.prompt_ids == [1, 2]
    for scheduler, ids, status, code in [(s, (1, 2, 3), 400, "context_length_exceeded"),
                                         (FakeScheduler(QueueFull("full")), (1,), 429, "queue_full"),
                                         (FakeScheduler(ShuttingDown("bye")), (1,), 503, "shutting_down")]:
        with pytest.raises(APIError) as e:
            asyncio.run(go(scheduler, ids))
        assert (e.value.status, e.value.code) == (status, code)
    assert e.value.message == "bye"


def test_collect_answers_and_cancels_when_the_client_goes_away(monkeypatch):
    monkeypatch.setattr(lifecycle, "WATCH_S", 0.01)

    async def go(push, gone_after: int):
        s = FakeScheduler()
        req = lifecycle.submit(s, [1], None, "hamburger", 10)
        calls = 0

        async def is_disconnected():
            nonlocal calls
            calls += 1
            return calls > gone_after

        for item in push:
            req.queue.put_nowait(item)
        try:
            return await lifecycle.collect(s, req, is_disconnected)
        finally:
            assert bool(s.cancelled) == (not push or push[-1][0] not in ("done", "error"))

    r = result()
    assert asyncio.run(go([("event", event("x")), ("done", r)], 10 ** 6)) is r
    for push, status in [([("error", RuntimeError("oom"))], 500), ([("error", ShuttingDown("bye"))], 503),
                         ([], 499)]:
        with pytest.raises(APIError) as e:
            asyncio.run(go(push, 2))
        assert e.value.status == status


def test_stream_events_in_order_and_cancel_on_close():
    async def go(push, take=None):
        s = FakeScheduler()
        req = lifecycle.submit(s, [1], None, "hamburger", 10)
        for item in push:
            req.queue.put_nowait(item)
        events = lifecycle.stream(s, [req], Chunks("chat", "chatcmpl-1", "m"))
        out = []
        async for e in events:
            out.append(e)
            if take and len(out) == take:
                await events.aclose()  # the client went away
                break
        return out, s.cancelled

    out, cancelled = asyncio.run(go([("event", event("hello")), ("event", event(" wor")), ("done", result())]))
    payloads = [json.loads(e[len("data: "):]) if e != "data: [DONE]\n\n" else "[DONE]" for e in out]
    assert all(e.startswith("data: ") and e.endswith("\n\n") for e in out) and not cancelled
    assert [p["choices"][0]["delta"] for p in payloads[:-1]] == [
        {"role": "assistant", "content": ""}, {"content": "hello"}, {"content": " wor"}, {"content": "ld"}]
    assert payloads[-2]["choices"][0]["finish_reason"] == "stop" and payloads[-1] == "[DONE]"
    out, cancelled = asyncio.run(go([("error", ShuttingDown("bye"))]))
    assert json.loads(out[-1][len("data: "):])["error"]["code"] == "shutting_down" and not cancelled
    out, cancelled = asyncio.run(go([("event", event("a"))], take=2))
    assert len(out) == 2 and len(cancelled) == 1


def queued(s: FakeScheduler, pushes: list[list]) -> list:
    """One request per list of ``pushes`` (the answers of one HTTP request), each with those items in its queue."""
    reqs = lifecycle.submit_all(s, [[1]] * len(pushes), [None] * len(pushes), "hamburger", 10)
    for req, push in zip(reqs, pushes):
        for item in push:
            req.queue.put_nowait(item)
    return reqs


def test_several_answers_stream_interleaved_and_end_together():
    """`n` answers: each gets its role chunk, its groups' chunks as they come and its final chunk, under its index;
    then one usage chunk for all, then [DONE]. An answer that fails ends the stream and cancels the others."""
    async def go(pushes):
        s = FakeScheduler()
        reqs = queued(s, pushes)
        chunks = Chunks("chat", "chatcmpl-1", "m", include_usage=True, n=2)
        return [x async for x in lifecycle.stream(s, reqs, chunks)], s.cancelled, reqs

    out, cancelled, _ = asyncio.run(go([[("event", event("he")), ("done", result(text="he"))],
                                        [("event", event("hello")), ("done", result(text="hello world"))]]))
    payloads = [json.loads(e[len("data: "):]) for e in out[:-1]]
    assert out[-1] == "data: [DONE]\n\n" and not cancelled
    by_index = {0: [], 1: []}
    for p in payloads[:-1]:
        (choice,) = p["choices"]
        by_index[choice["index"]].append((choice["delta"], choice["finish_reason"]))
    assert by_index[0] == [({"role": "assistant", "content": ""}, None), ({"content": "he"}, None), ({}, "stop")]
    assert by_index[1] == [({"role": "assistant", "content": ""}, None), ({"content": "hello"}, None),
                           ({"content": " world"}, "stop")]
    assert payloads[-1]["usage"] == usage([result(text="he"), result(text="hello world")], n=2)
    out, cancelled, reqs = asyncio.run(go([[("error", RuntimeError("oom"))], [("event", event("x"))]]))
    assert json.loads(out[-1][len("data: "):])["error"]["type"] == "server_error" and cancelled == [reqs[1]]


def test_several_answers_are_collected_in_order_and_a_failure_cancels_the_rest():
    async def go(pushes):
        s = FakeScheduler()
        reqs = queued(s, pushes)

        async def is_disconnected():
            return False
        try:
            return await lifecycle.collect_all(s, reqs, is_disconnected)
        finally:
            await asyncio.sleep(0)  # (a cancelled answer's task ends at the loop's next turn)
            go.cancelled, go.reqs = list(s.cancelled), reqs

    a, b = result(text="a"), result(text="b")
    assert asyncio.run(go([[("done", a)], [("event", event("x")), ("done", b)]])) == [a, b]
    with pytest.raises(APIError) as e:
        asyncio.run(go([[("event", event("x"))], [("error", RuntimeError("oom"))]]))
    assert e.value.status == 500 and go.cancelled == [go.reqs[0]]  # (the one still running)


def test_submitting_several_answers_is_all_or_none():
    class Full(FakeScheduler):
        def submit(self, req):
            if self.submitted:
                raise QueueFull("1 waiting")
            self.submitted.append(req)

    async def go():
        s = Full()
        with pytest.raises(APIError) as e:
            lifecycle.submit_all(s, [[1], [1]], [None, None], "hamburger", 10)
        return e.value.status, s.submitted, s.cancelled

    status, submitted, cancelled = asyncio.run(go())
    assert status == 429 and cancelled == submitted and len(submitted) == 1


def test_answers_of_a_seeded_request_draw_with_successive_seeds():
    config = DecodingConfig(temperature=0.7, seed=5)
    parsed = Parsed(config, "hamburger", [[1]], False, False, n=3)
    assert [c.seed for c in parsed.choice_configs()] == [5, 6, 7]
    top = Parsed(DecodingConfig(seed=(1 << 64) - 1), "hamburger", [[1]], False, False, n=2)
    assert [c.seed for c in top.choice_configs()] == [(1 << 64) - 1, (1 << 64) - 2]
    assert Parsed(DecodingConfig(), "hamburger", [[1]], False, False, n=2).choice_configs() == [DecodingConfig()] * 2


def test_a_batch_of_prompts_gets_each_prompts_answers(char_tokenizer):
    """The completions API's batch: every prompt's `n` answers, prompt by prompt, each drawn as a request with that
    prompt alone; each echo its own prompt; the rows a request may make are bounded."""
    body = {"prompt": ["ab", [5, 6, 7]], "n": 2, "seed": 9, "temperature": 1.0, "echo": True}
    parsed = prepare(json.dumps(body).encode(), "completion", char_tokenizer, 8, None)
    prompts, configs = parsed.answers()
    assert prompts == [ids(char_tokenizer, "ab")] * 2 + [[5, 6, 7]] * 2 and [c.seed for c in configs] == [9, 10] * 2
    assert [e.text for e in parsed.echoes()] == ["ab", "ab"] + [char_tokenizer.decode([5, 6, 7])] * 2
    for bad_body in ({"prompt": ["a"] * 65}, {"prompt": ["a"] * 5, "n": 13}, {"prompt": ["a", 5]}, {"prompt": []}):
        with pytest.raises(APIError) as e:
            prepare(json.dumps(bad_body).encode(), "completion", char_tokenizer, 8, None)
        assert e.value.status == 400


def test_usage_and_body_of_several_answers():
    a, b = result(text="a"), result(text="b", tokens=5, forwards=3)
    use = usage([a, b], n=2)
    assert (use["prompt_tokens"], use["completion_tokens"], use["total_tokens"]) == (4, 8, 12)
    assert usage([a, b])["prompt_tokens"] == 8  # (two prompts of 4 tokens, an answer each)
    assert use["hamburger"]["base_forwards"] == 5 and use["hamburger"]["tau"] == 1.6
    assert use["hamburger"]["kv_slots"] == 10 and use["hamburger"]["groups"] == 4
    body = completion_body("completion", "cmpl-1", "m", [a, b], n=2)
    assert [(c["index"], c["text"]) for c in body["choices"]] == [(0, "a"), (1, "b")] and body["usage"] == use


def test_tokenize_reads_prompts_as_requests_do():
    """The bundled tokenizer: /tokenize's ids are the prompt a chat or completions request reads (`prepare`), its
    token strings the tokenizer's own pieces (byte-level BPE writes a leading space as 'Ġ'), /detokenize the text."""
    from transformers import AutoTokenizer

    from hamburger.core.base import resolve_base
    from hamburger.serve.tokenize import detokenize, tokenize

    tok = AutoTokenizer.from_pretrained(resolve_base(None)[1])
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello world"}]
    chat = tokenize(json.dumps({"messages": messages}).encode(), tok, 8192)
    asked = prepare(json.dumps({"messages": messages}).encode(), "chat", tok, 16, None)
    assert chat["tokens"] == asked.prompts[0] and chat["count"] == len(chat["tokens"]) > 10
    plain = tokenize(b'{"prompt": "Hello world", "return_token_strs": true}', tok, 8192)
    assert plain["token_strs"] == ["Hello", "\u0120world"] and plain["max_model_len"] == 8192
    assert detokenize(json.dumps({"tokens": plain["tokens"]}).encode(), tok) == {"prompt": "Hello world"}


def test_settings_a_tool_call_cannot_go_with_are_a_400(char_tokenizer):
    """`min_tokens` beside tools that hold the answer to a schema: refused at parse, not failed by the engine (500)."""
    body = {"messages": [{"role": "user", "content": "hi"}], "min_tokens": 3, "tool_choice": "required",
            "tools": [{"type": "function", "function": {"name": "now"}}]}
    with pytest.raises(APIError) as e:
        prepare(json.dumps(body).encode(), "chat", char_tokenizer, 8, None)
    assert e.value.status == 400 and "min_tokens" in str(e.value)


def test_chat_template_fields(char_tokenizer):
    """vLLM's `add_generation_prompt`, `continue_final_message` and `chat_template_kwargs` choose how the template
    renders the messages; options that cannot go together, or a kwarg that is the template call's own, are a 400."""
    from tests.helpers import CHAT_TEMPLATE

    def read(**fields) -> str:
        body = {"messages": fields.pop("messages", [{"role": "user", "content": "Hi"}]), **fields}
        return char_tokenizer.decode(prepare(json.dumps(body).encode(), "chat", char_tokenizer, 8, None).prompts[0],
                                     skip_special_tokens=True)
    char_tokenizer.chat_template = CHAT_TEMPLATE + "{% if shout %}!{% endif %}"
    try:
        assert read() == "user: Hi\nassistant:" and read(add_generation_prompt=False) == "user: Hi\n"
        prefilled = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Once"}]
        assert read(messages=prefilled, continue_final_message=True) == "user: Hi\nassistant: Once"
        assert read(chat_template_kwargs={"shout": True}) == "user: Hi\nassistant:!"
        for fields, says in [({"continue_final_message": True}, "the assistant's"),
                             ({"messages": prefilled, "continue_final_message": True, "add_generation_prompt": True},
                              "cannot both be true"),
                             ({"chat_template_kwargs": {"tokenize": False}}, "may not set ['tokenize']"),
                             ({"chat_template_kwargs": {"messages": []}}, "may not set ['messages']"),
                             ({"chat_template_kwargs": ["shout"]}, "must be an object"),
                             ({"add_generation_prompt": "yes"}, "must be a boolean")]:
            with pytest.raises(APIError) as e:
                read(**fields)
            assert e.value.status == 400 and says in e.value.message, (fields, e.value.message)
    finally:
        char_tokenizer.chat_template = None


def test_vllms_top_k_of_minus_one_is_off(char_tokenizer):
    """Clients of vLLM send `top_k` -1 (its "off", the default of its sampling parameters): the answer top_k 0 gets."""
    body = {"prompt": "hi", "temperature": 1.0, "seed": 3}
    parsed = [prepare(json.dumps({**body, "top_k": k}).encode(), "completion", char_tokenizer, 8, None)
              for k in (-1, 0, 5)]
    assert [p.config.top_k for p in parsed] == [0, 0, 5] and parsed[0].config == parsed[1].config
    with pytest.raises(APIError) as e:
        prepare(json.dumps({**body, "top_k": -2}).encode(), "completion", char_tokenizer, 8, None)
    assert e.value.status == 400 and "top_k" in str(e.value)
    assert DecodingConfig(top_k=-1, temperature=1.0).validate().top_k == 0
    with pytest.raises(HamburgerError, match="0 or -1: off"):
        DecodingConfig(top_k=-2).validate()
