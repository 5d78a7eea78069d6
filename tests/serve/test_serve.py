"""`hamburger serve`: a real server process on a tiny random checkpoint, driven by the official openai client."""

import asyncio
import json
import math
import re
import time
from contextlib import ExitStack

import pytest
import torch

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from hamburger.engine.generate import Generation, generate  # noqa: E402
from hamburger.engine.prompt import encode_prompt  # noqa: E402
from hamburger.engine.prompt_cache import BLOCK  # noqa: E402
from hamburger.engine.sampling import DecodingConfig  # noqa: E402
from tests.helpers import FOLD, KEY, LOOKUP, MAX_QUEUE, error_of, long_body, tiny_long_group_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


def expect(checkpoint, prompt, max_tokens, confidence=0.5, raw=False, **cfg):
    _, model, tok = checkpoint
    ids = encode_prompt(tok, prompt, raw=raw)
    return generate(model, tok, ids, DecodingConfig(max_new_tokens=max_tokens, confidence=confidence, **cfg))


def chat(text):
    return [{"role": "user", "content": text}]


# ------------------------------------------------------------------------------ engine hook
def test_cancel_drops_the_row_and_keeps_the_others(char_tokenizer):
    model = tiny_long_group_model()
    prompts = [[1, 40, 41, 42, 43], [1, 50, 60, 70, 80, 90, 22], [1, 77]]
    cfg = DecodingConfig(max_new_tokens=16, confidence=0.5)
    singles = [generate(model, char_tokenizer, p, cfg) for p in prompts]
    run = Generation(model, char_tokenizer, prompts, cfg)
    seen = [0, 0, 0]
    for event in run:
        seen[event.row] += 1
        if event.row == 1 and seen[1] == 1:
            run.cancel(1)
    res = run.results
    assert seen[1] == 1 and res[1].finish_reason == "cancelled"
    assert res[1].token_ids == singles[1].token_ids[:res[1].tokens] and res[1].forwards == 1
    for i in (0, 2):
        assert (res[i].token_ids, res[i].groups, res[i].finish_reason) == \
               (singles[i].token_ids, singles[i].groups, singles[i].finish_reason)
    run.cancel(0)  # a finished row stays as it was
    assert run.rows[0].reason == singles[0].finish_reason


# ------------------------------------------------------------------------------ happy paths
def test_chat_completion_equals_engine(server, checkpoint):
    out = server.client().chat.completions.create(model="anything", messages=chat("Hi there"), max_tokens=20)
    ref = expect(checkpoint, chat("Hi there"), 20)
    assert out.object == "chat.completion" and out.model == "ckpt"
    assert out.choices[0].message.role == "assistant" and out.choices[0].message.content == ref.text
    assert out.choices[0].finish_reason == {"eos": "stop", "length": "length"}[ref.finish_reason]
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (ref.prompt_tokens, ref.tokens)
    assert out.usage.total_tokens == ref.prompt_tokens + ref.tokens
    ext = out.usage.model_extra["hamburger"]
    assert ext["base_forwards"] == ref.forwards and ext["kv_slots"] == ref.kv_slots
    assert ext["kv_slots_ordinary"] == ref.kv_slots_ordinary and ext["confidence"] == 0.5
    assert ext["tau"] == pytest.approx(ref.tau, abs=1e-3) and ext["tau"] > 1


def reused(checkpoint, kept: list[dict], asked: list[dict]) -> int:
    """The prompt tokens of chat ``asked`` a prompt cache that read chat ``kept`` gives: its whole prompt where the
    prompt asked begins with it, else the whole blocks they share."""
    a, b = (encode_prompt(checkpoint[2], m) for m in (kept, asked))
    common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
    return common if common == len(a) else common // BLOCK * BLOCK


@pytest.mark.parametrize("mode", ["hamburger", "verify", "verify_fold"])
def test_a_conversation_reads_only_its_new_turn(mode, server, checkpoint):
    """The server keeps the prompts it read (`--prompt-cache`, on by default): a chat's next turn reads only what the
    last prompt did not hold, OpenAI's `cached_tokens` counts the rest, and the answers are the engine's."""
    client = server.client()
    system = {"role": "system", "content": f"You are a terse assistant in {mode} mode. " * 2}
    turns = [system, {"role": "user", "content": "Hi there"}]
    first = client.chat.completions.create(model="ckpt", messages=turns, max_tokens=10, extra_body={"mode": mode})
    turns += [{"role": "assistant", "content": first.choices[0].message.content},
              {"role": "user", "content": "And then?"}]
    second = client.chat.completions.create(model="ckpt", messages=turns, max_tokens=10, extra_body={"mode": mode})
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    # (this template's generation prompt is not how it writes an assistant's turn: the cut before that)
    assert second.usage.prompt_tokens_details.cached_tokens == reused(checkpoint, turns[:2], turns) >= 5 * BLOCK
    if mode == "hamburger":
        assert second.choices[0].message.content == expect(checkpoint, turns, 10).text
    bye = [system, {"role": "user", "content": "Bye"}]
    other = client.chat.completions.create(model="ckpt", messages=bye, max_tokens=4, extra_body={"mode": mode})
    assert other.usage.prompt_tokens_details.cached_tokens == reused(checkpoint, turns, bye) > 0  # (the system's)
    kept = server.health()["prompt_cache"][mode]
    assert kept["hits"] >= 2 and 0 < kept["bytes"] <= kept["max_bytes"] == 256 * 2 ** 20


def test_lossless_verify_keeps_each_answer_for_the_next_prompt(server, checkpoint):
    """In lossless verify mode the server keeps a prompt with its answer: a prompt that writes the answer back reads
    on from the answer's last fed token (all but its last)."""
    client = server.client()
    first = client.completions.create(model="ckpt", prompt="Once upon a time, in verify mode,", max_tokens=6,
                                      extra_body={"mode": "verify"})
    assert first.choices[0].finish_reason == "length" and first.usage.completion_tokens == 6
    follow_up = "Once upon a time, in verify mode," + first.choices[0].text + " and then"
    second = client.completions.create(model="ckpt", prompt=follow_up, max_tokens=4, extra_body={"mode": "verify"})
    assert second.usage.prompt_tokens_details.cached_tokens == first.usage.prompt_tokens + 6 - 1


def test_verify_mode_request_is_the_base_greedy_answer(server, checkpoint):
    """The request field `mode: verify` runs lossless verify mode (drafting also by the server's --lookup): the base's
    own greedy answer, streamed or not."""
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.verify import VerifyGeneration

    _, model, tok = checkpoint
    client = server.client()
    ids = encode_prompt(tok, chat("Verify me"))
    ref = VerifyGeneration(model, tok, [ids], DecodingConfig(max_new_tokens=20),
                           lookup=PromptLookup(tokens=LOOKUP)).run()[0]
    base = generate(model, tok, ids, DecodingConfig(max_new_tokens=20, confidence=1.0))
    assert ref.token_ids == base.token_ids
    out = client.chat.completions.create(model="ckpt", messages=chat("Verify me"), max_tokens=20,
                                         extra_body={"mode": "verify"})
    assert out.choices[0].message.content == base.text
    ext = out.usage.model_extra["hamburger"]
    assert ext["mode"] == "verify" and ext["base_forwards"] == ref.forwards
    assert ext["kv_slots"] == ext["kv_slots_ordinary"]
    stream = client.chat.completions.create(model="ckpt", messages=chat("Verify me"), max_tokens=20, stream=True,
                                            extra_body={"mode": "verify"})
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == base.text


def test_verify_fold_request_is_the_folding_engine(server, checkpoint):
    """`mode: verify_fold` runs verify mode folding by the server's --fold (and drafting by its --lookup); usage
    reports the mode and the folded cache's slots."""
    from hamburger.engine.folding import parse_folding
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.verify import VerifyGeneration

    _, model, tok = checkpoint
    ids = encode_prompt(tok, chat("Fold me up"))
    ref = VerifyGeneration(model, tok, [ids], DecodingConfig(max_new_tokens=30), fold=parse_folding(FOLD),
                           lookup=PromptLookup(tokens=LOOKUP)).run()[0]
    out = server.client().chat.completions.create(model="ckpt", messages=chat("Fold me up"), max_tokens=30,
                                                  extra_body={"mode": "verify_fold"})
    assert out.choices[0].message.content == ref.text
    ext = out.usage.model_extra["hamburger"]
    assert ext["mode"] == "verify_fold" and (ext["base_forwards"], ext["kv_slots"]) == (ref.forwards, ref.kv_slots)
    assert ext["kv_slots"] < ext["kv_slots_ordinary"], "the test needs folds"


def test_stream_equals_non_stream(server):
    client = server.client()
    kw = dict(model="ckpt", messages=chat("Tell me"), max_tokens=24)
    whole = client.chat.completions.create(**kw)
    chunks = list(client.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    content = [c for c in chunks[1:] if c.choices and c.choices[0].delta.content is not None]
    assert "".join(c.choices[0].delta.content for c in content) == whole.choices[0].message.content
    assert len(content) == whole.usage.model_extra["hamburger"]["groups"]  # one chunk per token group
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(final) == 1 and final[0].choices[0].finish_reason == whole.choices[0].finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    # without include_usage there is no usage chunk
    plain = list(client.chat.completions.create(**kw, stream=True))
    assert all(c.choices and c.usage is None for c in plain)


def test_eval_against_the_endpoint_agrees_with_the_local_engine(server, checkpoint, tmp_path):
    """`hamburger eval --endpoint` scores the served model next to the same checkpoint run locally."""
    import json as _json

    from hamburger.cli.main import main

    gsm = tmp_path / "gsm.jsonl"
    gsm.write_text("".join(_json.dumps({"question": q, "answer": f"x\n#### {a}"}) + "\n"
                           for q, a in [("1+1?", 2), ("3+4?", 7), ("9-3?", 6)]))
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(checkpoint[0]), "--tasks", "gsm8k", "--gsm8k-file", str(gsm),
                 "--confidence", "0.5", "--max-new-tokens", "12", "--endpoint", server.url + "/v1",
                 "--api-key", KEY, "--out", str(out)]) == 0
    rows = [_json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    local = {r["id"]: r for r in rows if r["method"] == "hamburger@0.5"}
    served = {r["id"]: r for r in rows if r["method"] == "endpoint"}
    assert set(local) == set(served) and len(served) == 3
    for key, row in served.items():  # the server runs at --confidence 0.5 too: same text, same forwards
        assert row["text"] == local[key]["text"] and row["forwards"] == local[key]["forwards"]


def test_models(server, checkpoint):
    assert [m.id for m in server.client().models.list()] == ["ckpt"]
    card = server.client().models.retrieve("ckpt")
    assert card.id == "ckpt" and card.max_model_len == checkpoint[1].context_length  # (vLLM's field)
    with pytest.raises(openai.NotFoundError):
        server.client().models.retrieve("gpt-4")


def test_completions_stop_and_seed(server, checkpoint):
    client = server.client()
    out = client.completions.create(model="ckpt", prompt="hello world", max_tokens=20)
    ref = expect(checkpoint, "hello world", 20, raw=True)
    assert out.choices[0].text == ref.text and out.object == "text_completion"
    text = ref.text
    stop = text[6:8]
    cut = text[:text.find(stop)]
    for stops in (stop, [stop, "never-there"]):
        got = client.completions.create(model="ckpt", prompt="hello world", max_tokens=20, stop=stops)
        assert got.choices[0].text == cut and got.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model="ckpt", prompt="hello world", max_tokens=20, stop=stop, stream=True)
    assert "".join(c.choices[0].text for c in streamed) == cut
    chat_stop = client.chat.completions.create(model="m", messages=chat("Hi there"), max_tokens=20,
                                               stop=[expect(checkpoint, chat("Hi there"), 20).text[5:7]])
    assert chat_stop.choices[0].finish_reason == "stop"
    sampled = [client.completions.create(model="ckpt", prompt="abc", max_tokens=12, temperature=0.9, top_p=0.95,
                                         seed=7).choices[0].text for _ in range(2)]
    assert sampled[0] == sampled[1] == expect(checkpoint, "abc", 12, raw=True, temperature=0.9, top_p=0.95,
                                              seed=7).text
    tau1 = client.completions.create(model="ckpt", prompt="abc", max_tokens=8, extra_body={"confidence": 1.0})
    assert tau1.usage.model_extra["hamburger"]["tau"] == 1.0
    reread = client.completions.create(model="ckpt", prompt="abc", max_tokens=12, extra_body={"reread": 1.0})
    ref = expect(checkpoint, "abc", 12, raw=True, reread=1.0)
    assert reread.choices[0].text == ref.text and ref.rereads > 0
    assert reread.usage.model_extra["hamburger"]["rereads"] == ref.rereads
    assert reread.usage.model_extra["hamburger"]["kv_slots"] == ref.kv_slots


def test_n_answers_are_one_row_each(server, checkpoint):
    """`n` answers to one request: each is the engine's answer with its own seed (seed, seed + 1, ...), streamed or
    not, and the usage counts the prompt once and every answer's tokens."""
    client = server.client()
    kw = dict(model="ckpt", prompt="abc", max_tokens=12, temperature=0.9, seed=7, n=3)
    refs = [expect(checkpoint, "abc", 12, raw=True, temperature=0.9, seed=7 + i) for i in range(3)]
    assert len({r.text for r in refs}) > 1  # (the seeds differ)
    out = client.completions.create(**kw)
    assert [c.index for c in out.choices] == [0, 1, 2] and [c.text for c in out.choices] == [r.text for r in refs]
    assert out.usage.prompt_tokens == refs[0].prompt_tokens
    assert out.usage.completion_tokens == sum(r.tokens for r in refs)
    assert out.usage.model_extra["hamburger"]["base_forwards"] == sum(r.forwards for r in refs)
    texts, finished = ["", "", ""], []
    for chunk in client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=12,
                                                temperature=0.9, seed=7, n=3, stream=True):
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
            if choice.finish_reason:
                finished.append(choice.index)
    assert texts == [expect(checkpoint, chat("Hi there"), 12, temperature=0.9, seed=7 + i).text for i in range(3)]
    assert sorted(finished) == [0, 1, 2]
    greedy = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=8, n=2)
    assert greedy.choices[0].message.content == greedy.choices[1].message.content  # (greedy: the same answer)


def test_echo_scores_a_prompt_as_lm_eval_asks(server, checkpoint):
    """The completions API's `echo` with `logprobs`, as lm-evaluation-harness's `local-completions` sends it to score a
    continuation (token ids, `max_tokens` 1, `echo`, `logprobs` 1): the prompt's tokens' log-probabilities are the
    model's own reading of it, and its greedy flag is whether each token was the top one."""
    client, (_, model, tok) = server.client(), checkpoint
    context, continuation = tok.encode("Once upon a"), tok.encode(" time there", add_special_tokens=False)
    prompt = context + continuation
    out = client.completions.create(model="ckpt", prompt=[prompt], max_tokens=1, temperature=0, logprobs=1, echo=True,
                                    seed=1234).choices[0]
    lp = out.logprobs
    with torch.no_grad():
        expected = torch.log_softmax(model.base(torch.tensor([prompt])).logits[0, :-1].float(), -1)
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert len(lp.tokens) == len(prompt) + 1 and out.text.startswith(tok.decode(prompt))
    assert lp.token_logprobs[1:-1] == pytest.approx(expected.gather(1, torch.tensor(prompt[1:])[:, None])[:, 0].tolist(),
                                                    abs=1e-4)
    scored = lp.token_logprobs[len(context):-1]  # (lm-eval's slice: the continuation's tokens)
    greedy = all(t == max(top.values()) for t, top in zip(scored, lp.top_logprobs[len(context):-1]))
    assert greedy == (expected[len(context) - 1:].argmax(-1).tolist() == continuation)
    plain = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=4, echo=True).choices[0]
    assert plain.text == "Once upon" + expect(checkpoint, "Once upon", 4, raw=True).text and plain.logprobs is None
    kw = dict(model="ckpt", prompt="Once upon", max_tokens=8, echo=True, logprobs=2)
    whole = client.completions.create(**kw).choices[0]
    chunks = [c.choices[0] for c in client.completions.create(**kw, stream=True)]
    assert "".join(c.text for c in chunks) == whole.text
    streamed = [c.logprobs for c in chunks if c.logprobs]
    assert sum((lp.tokens for lp in streamed), []) == whole.logprobs.tokens
    assert sum((lp.text_offset for lp in streamed), []) == whole.logprobs.text_offset
    token_logprobs = sum((lp.token_logprobs for lp in streamed), [])
    assert token_logprobs[0] is None and token_logprobs[1:] == pytest.approx(whole.logprobs.token_logprobs[1:],
                                                                             abs=1e-9)


def test_response_formats_hold_answers_to_json(server, checkpoint):
    """Chat's `response_format`: a JSON schema (the engine's answer under it, which the schema accepts) and any JSON
    object; a schema that cannot hold an answer is a 400."""
    client = server.client()
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["n"], "additionalProperties": False}
    ref = expect(checkpoint, chat("Hi there"), 24, json_schema=schema)
    got = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=24, response_format={
        "type": "json_schema", "json_schema": {"name": "n", "schema": schema, "strict": True}}).choices[0]
    assert got.message.content == ref.text and got.finish_reason == "stop"
    assert list(json.loads(got.message.content)) == ["n"]
    any_object = client.chat.completions.create(model="ckpt", messages=chat("Hi"), max_tokens=48,
                                                response_format={"type": "json_object"}).choices[0].message.content
    assert any_object.startswith("{")
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="ckpt", messages=chat("Hi"), max_tokens=4, response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "frob"}}})
    assert error_of(e)["param"] == "response_format" and "unusable JSON schema" in error_of(e)["message"]


def test_the_clients_structured_output_helpers(server, checkpoint):
    """The official client's `parse` and `stream` helpers with a pydantic model: the schema they send holds the answer,
    which they read back as the model's object; streamed, the same object; as a strict function tool, its call's
    arguments."""
    import pydantic

    class Digit(pydantic.BaseModel):
        n: int = pydantic.Field(ge=0, le=9)
    client = server.client()
    got = client.chat.completions.parse(model="ckpt", messages=chat("Hi there"), max_tokens=24, response_format=Digit)
    parsed = got.choices[0].message.parsed
    assert isinstance(parsed, Digit) and got.choices[0].message.content == parsed.model_dump_json()
    with client.chat.completions.stream(model="ckpt", messages=chat("Hi there"), max_tokens=24,
                                        response_format=Digit) as stream:
        assert stream.get_final_completion().choices[0].message.parsed == parsed
    called = client.chat.completions.parse(model="ckpt", messages=chat("Hi there"), max_tokens=48,
                                           tools=[openai.pydantic_function_tool(Digit)], tool_choice="required")
    (call,) = called.choices[0].message.tool_calls
    assert call.function.name == "Digit" and isinstance(call.function.parsed_arguments, Digit)


def test_vllm_structured_outputs_hold_answers(server, checkpoint):
    """vLLM's `structured_outputs` and its older `guided_*` fields, through the official client's `extra_body`: a
    choice, a regex, a grammar in GBNF and a JSON schema hold the answer, as the engine holds it; malformed ones, two
    at once, or one beside `response_format` are 400s."""
    client = server.client()

    def answer(create, prompt, **extra):
        return create(model="ckpt", max_tokens=12, extra_body=extra, **prompt).choices[0]

    chat_prompt, text_prompt = {"messages": chat("Is it blue?")}, {"prompt": "My number is"}
    got = answer(client.chat.completions.create, chat_prompt, structured_outputs={"choice": ["yes", "no"]})
    assert got.message.content == expect(checkpoint, chat("Is it blue?"), 12, grammar='start: "yes" | "no"').text
    assert got.message.content in ("yes", "no") and got.finish_reason == "stop"
    number = answer(client.completions.create, text_prompt, guided_regex="[0-9]{3}").text
    assert re.fullmatch("[0-9]{3}", number)
    assert number == expect(checkpoint, "My number is", 12, raw=True, grammar="start: /[0-9]{3}/").text
    gbnf = answer(client.chat.completions.create, chat_prompt, structured_outputs={"grammar": 'root ::= "A" [0-9]'})
    assert re.fullmatch("A[0-9]", gbnf.message.content)
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    held = answer(client.chat.completions.create, chat_prompt, guided_json=json.dumps(schema)).message.content
    assert isinstance(json.loads(held)["ok"], bool)
    for extra, param in (({"structured_outputs": {"regex": "("}}, "structured_outputs"),
                         ({"structured_outputs": {"choice": []}}, "structured_outputs"),
                         ({"structured_outputs": {"lark": "start: /a/"}}, "structured_outputs"),
                         ({"guided_choice": ["a"], "guided_regex": "b"}, "guided_regex"),
                         ({"guided_json": "{not json"}, "guided_json"),
                         ({"response_format": {"type": "json_object"}, "guided_regex": "a"}, "response_format")):
        with pytest.raises(openai.BadRequestError) as e:
            answer(client.chat.completions.create, chat_prompt, **extra)
        assert error_of(e)["param"] == param, (extra, error_of(e))


def collect_stream(stream) -> tuple[str, dict, str]:
    """A streamed chat answer as a client adds it up: its content, its calls by index ({"name", "arguments", "id"}),
    its finish reason."""
    content, calls, finish = "", {}, None
    for chunk in stream:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for c in choice.delta.tool_calls or []:
                entry = calls.setdefault(c.index, {"name": "", "arguments": "", "id": ""})
                entry["id"] += c.id or ""
                entry["name"] += (c.function and c.function.name) or ""
                entry["arguments"] += (c.function and c.function.arguments) or ""
            finish = choice.finish_reason or finish
    return content, calls, finish


def test_tool_calls_through_the_official_client(server, checkpoint):
    """`tools` with `tool_choice` a named function or "required": the engine's answer held to the call's schema (the
    tools in the system message: this template ignores them) read as calls, streamed and not; "auto": this model
    writes text; a conversation that holds a call and its result goes on; malformed tools are a 400."""
    from hamburger.serve.tools import Conversation, parse_tools

    client, tok = server.client(), checkpoint[2]
    digit = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
             "required": ["n"], "additionalProperties": False}
    tools = [{"type": "function", "function": {"name": "pick", "description": "Pick a digit", "parameters": digit}},
             {"type": "function", "function": {"name": "now", "description": "The time"}}]
    messages = chat("Hi there")
    for choice, parallel in [({"type": "function", "function": {"name": "pick"}}, True), ("required", False)]:
        spec = parse_tools({"tools": tools, "tool_choice": choice, "parallel_tool_calls": parallel})
        ref = expect(checkpoint, Conversation.of(messages, spec, tok).messages, 64, json_schema=spec.schema())
        assert ref.finish_reason == "eos"
        _, calls = spec.calls(ref.text)
        want = [(c["function"]["name"], c["function"]["arguments"]) for c in calls]
        assert want and all(json.loads(arguments) is not None for _, arguments in want)
        args = dict(model="ckpt", messages=messages, max_tokens=64, tools=tools, tool_choice=choice,
                    parallel_tool_calls=parallel)
        got = client.chat.completions.create(**args).choices[0]
        assert got.finish_reason == "tool_calls" and got.message.content is None
        assert [(c.function.name, c.function.arguments) for c in got.message.tool_calls] == want
        assert all(c.type == "function" and c.id.startswith("call_") for c in got.message.tool_calls)
        content, streamed, finish = collect_stream(client.chat.completions.create(**args, stream=True))
        assert (content, finish) == ("", "tool_calls")
        assert [(c["name"], c["arguments"]) for _, c in sorted(streamed.items())] == want
        assert all(c["id"].startswith("call_") for c in streamed.values())
    shown = Conversation.of(messages, parse_tools({"tools": tools}), tok).messages
    ref = expect(checkpoint, shown, 12)
    got = client.chat.completions.create(model="ckpt", messages=messages, max_tokens=12, tools=tools).choices[0]
    assert "<tool_call>" not in ref.text and got.message.content == ref.text and not got.message.tool_calls
    assert got.finish_reason == "length" and shown[0]["role"] == "system"
    # the call and its result go back to the model, as this template reads them
    history = messages + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "pick", "arguments": '{"n":3}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3"}]
    ref = expect(checkpoint, Conversation.of(history, None, tok).messages, 8)
    got = client.chat.completions.create(model="ckpt", messages=history, max_tokens=8, tools=tools,
                                         tool_choice="none")
    assert got.choices[0].message.content == ref.text
    assert got.usage.prompt_tokens == len(encode_prompt(tok, Conversation.of(history, None, tok).messages))
    for bad, param in [(dict(tools=tools, tool_choice={"type": "function", "function": {"name": "gone"}}),
                        "tool_choice"),
                       (dict(tools=[{"type": "function", "function": {"name": "a b"}}]), "tools"),
                       (dict(tools=tools, response_format={"type": "json_object"}), "response_format")]:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="ckpt", messages=messages, max_tokens=4, **bad)
        assert error_of(e)["param"] == param


def test_custom_tools_through_the_official_client(server, checkpoint):
    """Custom tools (their input text held to a regex or a Lark grammar) through the official client: named, the
    engine's answer is the call's input, streamed and not; "required" among `allowed_tools`: calls alone, each input
    held to its tool's grammar; the Responses API's custom_tool_call items, streamed as its input's events, and a
    call and its output read back; a malformed format is a 400."""
    from hamburger.serve.tools import Conversation, parse_tools

    client, tok = server.client(), checkpoint[2]
    regex, lark = "[0-9]{2,4}", 'start: NUM ("+" NUM)*\nNUM: /[0-9]/'
    tools = [{"type": "custom", "custom": {"name": "digits", "format": {
                 "type": "grammar", "grammar": {"syntax": "regex", "definition": regex}}}},
             {"type": "custom", "custom": {"name": "sum", "format": {
                 "type": "grammar", "grammar": {"syntax": "lark", "definition": lark}}}}]  # (short: 1 char a token)
    messages = chat("Hi there")
    allowed = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "custom", "custom": {"name": "digits"}}, {"type": "custom", "custom": {"name": "sum"}}]}}
    for choice in ({"type": "custom", "custom": {"name": "digits"}}, allowed):
        spec = parse_tools({"tools": tools, "tool_choice": choice})
        ref = expect(checkpoint, Conversation.of(messages, spec, tok).messages, 48, grammar=spec.grammar())
        want = [(c["custom"]["name"], c["custom"]["input"]) for c in spec.calls(ref.text)[1]]
        assert ref.finish_reason == "eos" and want
        for name, given in want:
            assert re.fullmatch(regex if name == "digits" else r"[0-9](\+[0-9])*", given), (name, given)
        args = dict(model="ckpt", messages=messages, max_tokens=48, tools=tools, tool_choice=choice)
        got = client.chat.completions.create(**args).choices[0]
        assert got.finish_reason == "tool_calls" and got.message.content is None
        assert [(c.type, c.custom.name, c.custom.input) for c in got.message.tool_calls] == \
            [("custom", name, given) for name, given in want]
        chunks = [c for chunk in client.chat.completions.create(**args, stream=True) for c in chunk.choices]
        streamed = {}
        for c in [call for choice_chunk in chunks for call in choice_chunk.delta.tool_calls or []]:
            custom = c.model_extra["custom"]
            entry = streamed.setdefault(c.index, ["", ""])
            entry[0] += custom.get("name", "")
            entry[1] += custom.get("input", "")
        assert [tuple(e) for _, e in sorted(streamed.items())] == want and chunks[-1].finish_reason == "tool_calls"
    # the Responses API: a custom_tool_call item, its input streamed, and a call with its output read back
    named = {"type": "custom", "name": "digits"}
    responses_tools = [{"type": "custom", "name": "digits", "format": {
        "type": "grammar", "syntax": "regex", "definition": regex}}]
    chat_call = client.chat.completions.create(model="ckpt", messages=messages, max_tokens=48, tools=tools[:1],
                                               tool_choice={"type": "custom", "custom": {"name": "digits"}})
    given = chat_call.choices[0].message.tool_calls[0].custom.input
    args = dict(model="ckpt", input="Hi there", max_output_tokens=48, tools=responses_tools, tool_choice=named)
    got = client.responses.create(**args)
    assert [(o.type, o.name, o.input) for o in got.output] == [("custom_tool_call", "digits", given)]
    events = list(client.responses.create(**args, stream=True))
    assert "".join(e.delta for e in events if e.type == "response.custom_tool_call_input.delta") == given
    assert [e.input for e in events if e.type == "response.custom_tool_call_input.done"] == [given]
    assert [(o.type, o.input) for o in events[-1].response.output] == [("custom_tool_call", given)]
    with client.responses.stream(**args) as stream:  # (the client's stream helper adds the events up)
        assert [(o.type, o.input) for o in stream.get_final_response().output] == [("custom_tool_call", given)]
    history = [{"role": "user", "content": "Hi there"},
               {"type": "custom_tool_call", "call_id": "c", "name": "digits", "input": given},
               {"type": "custom_tool_call_output", "call_id": "c", "output": "noted"}]
    ref = client.chat.completions.create(model="ckpt", max_tokens=8, tools=tools[:1], messages=[
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "custom", "custom": {"name": "digits", "input": given}}]},
        {"role": "tool", "tool_call_id": "c", "content": "noted"}])
    got = client.responses.create(model="ckpt", input=history, max_output_tokens=8, tools=responses_tools)
    assert got.output_text == ref.choices[0].message.content
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="ckpt", messages=messages, max_tokens=4, tools=[
            {"type": "custom", "custom": {"name": "x", "format": {"type": "grammar", "grammar": {
                "syntax": "lark", "definition": "start: ("}}}}])
    assert error_of(e)["param"] == "tools" and "custom.format" in error_of(e)["message"]


def test_predicted_outputs_draft_in_verify_mode(server, checkpoint):
    """The official client's `prediction`: in verify mode the answer is the one without it, streamed or not; the
    answer itself as the prediction is drafted and kept (fewer base forwards), counted in
    `usage.completion_tokens_details`; a wrong one changes no token; "hamburger" mode and malformed ones are 400s."""
    client = server.client()
    args = dict(model="ckpt", messages=chat("Hi there"), max_tokens=40, extra_body={"mode": "verify"})
    plain = client.chat.completions.create(**args)
    text = plain.choices[0].message.content
    assert len(text) > 10 and plain.usage.completion_tokens_details.accepted_prediction_tokens == 0
    right = client.chat.completions.create(**args, prediction={"type": "content", "content": text})
    details = right.usage.completion_tokens_details
    assert right.choices[0].message.content == text and details.accepted_prediction_tokens > 10
    assert right.usage.model_extra["hamburger"]["base_forwards"] < plain.usage.model_extra["hamburger"]["base_forwards"]
    streamed = client.chat.completions.create(**args, stream=True, prediction={
        "type": "content", "content": [{"type": "text", "text": text[:5]}, {"type": "text", "text": text[5:]}]})
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == text
    wrong = client.chat.completions.create(**args, prediction={"type": "content", "content": text[::-1]})
    assert wrong.choices[0].message.content == text
    for prediction, extra in [({"type": "content", "content": text}, {"mode": "hamburger"}),
                              ({"type": "text", "content": text}, {"mode": "verify"}),
                              ({"type": "content", "content": 3}, {"mode": "verify"})]:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="ckpt", messages=chat("Hi"), max_tokens=4, prediction=prediction,
                                           extra_body=extra)
        assert error_of(e)["param"] == "prediction"


def test_the_responses_api_through_the_official_client(server, checkpoint):
    """`client.responses.create`: the engine's answer to the same messages as a response object (instructions a
    system message), streamed as typed events that add up to it; a named function's call as chat makes it, as a
    function_call item (streamed too, through the client's stream helper), and its output read back; kept responses
    fetched, deleted and gone on from (`previous_response_id`); refusals name the Responses field."""
    client = server.client()
    ref = expect(checkpoint, [{"role": "system", "content": "Be brief."}, *chat("Hi there")], 10)
    ref_text = ref.text
    args = dict(model="ckpt", instructions="Be brief.", input="Hi there", max_output_tokens=10)
    got = client.responses.create(**args)
    assert got.output_text == ref.text and got.usage.output_tokens == ref.tokens
    assert got.status == ("incomplete" if ref.finish_reason == "length" else "completed")
    events = list(client.responses.create(**args, stream=True))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # (completed, or incomplete at its token limit: the stream helper wants completed)
    assert events[-1].type == f"response.{got.status}" and final.status == got.status
    assert deltas == final.output_text == ref.text and final.usage.output_tokens == ref.tokens
    digit = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
             "required": ["n"], "additionalProperties": False}
    call = client.chat.completions.create(
        model="ckpt", messages=chat("Hi there"), max_tokens=64, tool_choice={"type": "function", "function": {
            "name": "pick"}}, tools=[{"type": "function", "function": {"name": "pick", "parameters": digit}}]
    ).choices[0].message.tool_calls[0].function
    tools = [{"type": "function", "name": "pick", "parameters": digit}]
    with client.responses.stream(model="ckpt", input="Hi there", max_output_tokens=64, tools=tools,
                                 tool_choice={"type": "function", "name": "pick"}) as stream:
        streamed = stream.get_final_response()
    got = client.responses.create(model="ckpt", input="Hi there", max_output_tokens=64, tools=tools,
                                  tool_choice={"type": "function", "name": "pick"})
    for response in (got, streamed):
        assert [(o.type, o.name, o.arguments) for o in response.output] == [("function_call", "pick", call.arguments)]
    history = [{"role": "user", "content": "Hi there"},
               {"type": "function_call", "call_id": got.output[0].call_id, "name": "pick", "arguments": call.arguments},
               {"type": "function_call_output", "call_id": got.output[0].call_id, "output": "3"}]
    ref = client.chat.completions.create(model="ckpt", max_tokens=8, messages=[
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "pick", "arguments": call.arguments}}]},
        {"role": "tool", "tool_call_id": "c", "content": "3"}])
    got = client.responses.create(model="ckpt", input=history, max_output_tokens=8)
    assert got.output_text == ref.choices[0].message.content
    # the text's log-probabilities, as chat gives them
    lp = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=5, logprobs=True,
                                        top_logprobs=2).choices[0].logprobs.content
    got = client.responses.create(model="ckpt", input="Hi there", max_output_tokens=5, top_logprobs=2,
                                  include=["message.output_text.logprobs"]).output[0].content[0].logprobs
    assert [(e.token, e.logprob, [t.token for t in e.top_logprobs]) for e in got] == \
        [(e.token, e.logprob, [t.token for t in e.top_logprobs]) for e in lp] and len(got) == 5
    # kept responses: fetched back, and gone on from as the whole conversation sent again would be
    first = client.responses.create(model="ckpt", input="Hi there", max_output_tokens=6)
    assert first.store and client.responses.retrieve(first.id).output_text == first.output_text
    turn = [{"role": "user", "content": "And then?"}]
    whole = client.responses.create(model="ckpt", max_output_tokens=6, input=[
        {"role": "user", "content": "Hi there"}, {"role": "assistant", "content": first.output_text}, *turn])
    on = client.responses.create(model="ckpt", previous_response_id=first.id, input=turn, max_output_tokens=6)
    assert on.output_text == whole.output_text and on.previous_response_id == first.id
    assert on.usage.input_tokens == whole.usage.input_tokens
    assert client.responses.retrieve(events[-1].response.id).output_text == ref_text  # (a streamed one too)
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    unkept = client.responses.create(model="ckpt", input="Hi there", max_output_tokens=2, store=False)
    assert not unkept.store
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unkept.id)
    for bad, param in [(dict(input="x", max_output_tokens=0), "max_output_tokens"),
                       (dict(input=[{"role": "robot", "content": "x"}]), "input[0].role"),
                       (dict(input="x", previous_response_id="resp_gone"), "previous_response_id")]:
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="ckpt", **bad)
        assert error_of(e)["param"] == param


def test_metrics_count_what_the_server_answered(server):
    """`GET /metrics` (no key, Prometheus' text format): an answer adds one request and its tokens."""
    from tests.serve.test_metrics import samples

    def now() -> dict:
        r = httpx.get(server.url + "/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        return samples(r.text)

    before = now()
    got = server.client().chat.completions.create(model="ckpt", messages=chat("Hi"), max_tokens=4)
    after = now()
    def answers(values: dict) -> float:  # (by the engine's finish reasons: eos, stop, length, cancelled)
        return sum(v for k, v in values.items() if k.startswith('hamburger_requests_total{mode="hamburger"'))

    assert answers(after) == answers(before) + 1
    tokens = 'hamburger_generation_tokens_total{mode="hamburger"}'
    assert after[tokens] == before.get(tokens, 0) + got.usage.completion_tokens


def test_tokenize_counts_what_requests_report(server, checkpoint):
    """`POST /tokenize` and `/detokenize` (vLLM's, also under /v1): a prompt or a chat with its tools is read as the
    completions and chat requests read it (`count` is their `usage.prompt_tokens`), and ids go back to the text; a
    reading this server does not do, a field it does not know, or no key is refused."""
    client, model, tok = server.client(), checkpoint[1], checkpoint[2]
    auth = {"Authorization": f"Bearer {KEY}"}

    def post(path: str, body: dict, status: int = 200) -> dict:
        r = httpx.post(server.url + path, json=body, headers=auth, timeout=30)
        assert r.status_code == status, r.text
        return r.json()
    got = post("/tokenize", {"model": "ckpt", "prompt": "abc", "return_token_strs": True})
    assert got["tokens"] == encode_prompt(tok, "abc", raw=True) and got["count"] == len(got["tokens"])
    assert got["max_model_len"] == model.context_length
    assert got["token_strs"] == tok.convert_ids_to_tokens(got["tokens"])
    asked = client.completions.create(model="ckpt", prompt="abc", max_tokens=1)
    assert asked.usage.prompt_tokens == got["count"]
    assert post("/v1/tokenize", {"prompt": got["tokens"]})["tokens"] == got["tokens"]
    tools = [{"type": "function", "function": {"name": "now", "description": "The time"}}]
    for extra in ({}, {"tools": tools}):
        counted = post("/v1/tokenize", {"messages": chat("Hi there"), "add_generation_prompt": True, **extra})
        answered = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=1, **extra)
        assert counted["count"] == answered.usage.prompt_tokens and "token_strs" not in counted
    # a prefilled reply (vLLM's `continue_final_message`): counted as the chat request reads it, answered from there
    prefilled = [*chat("Hi there"), {"role": "assistant", "content": "Once"}]
    fields = {"continue_final_message": True, "chat_template_kwargs": {"unused": 1}}
    counted = post("/tokenize", {"messages": prefilled, **fields})
    answered = client.chat.completions.create(model="ckpt", messages=prefilled, max_tokens=6, extra_body=fields)
    ref = generate(model, tok, counted["tokens"], DecodingConfig(max_new_tokens=6, confidence=0.5))
    assert (answered.usage.prompt_tokens, answered.choices[0].message.content) == (counted["count"], ref.text)
    assert tok.decode(counted["tokens"], skip_special_tokens=True).endswith("assistant: Once")
    assert post("/detokenize", {"tokens": got["tokens"]}) == {"prompt": "abc"}
    assert post("/v1/detokenize", {"model": "ckpt", "tokens": []}) == {"prompt": ""}
    for path, body, param in [("/tokenize", {"prompt": "abc", "messages": chat("Hi")}, "prompt"),
                              ("/tokenize", {"model": "ckpt"}, "prompt"),
                              ("/tokenize", {"messages": chat("Hi"), "add_generation_prompt": 0},
                               "add_generation_prompt"),
                              ("/tokenize", {"prompt": "abc", "add_special_tokens": False}, "add_special_tokens"),
                              ("/tokenize", {"prompt": "abc", "tools": tools}, "tools"),
                              ("/tokenize", {"prompt": "abc", "max_tokens": 3}, "max_tokens"),
                              ("/tokenize", {"prompt": ["a", "b"]}, "prompt"),
                              ("/tokenize", {"prompt": "abc", "return_token_strs": 1}, "return_token_strs"),
                              ("/detokenize", {"tokens": [len(tok)]}, "tokens"),
                              ("/detokenize", {"tokens": "abc"}, "tokens"),
                              ("/detokenize", {"tokens": [1], "prompt": "a"}, "prompt")]:
        assert post(path, body, 400)["error"]["param"] == param, body
    assert httpx.post(server.url + "/tokenize", json={"prompt": "abc"}).status_code == 401


def test_a_batch_of_prompts_through_the_official_client(server, checkpoint):
    """The completions API's batch of prompts with `n`: every prompt's answers, prompt by prompt, as the engine gives
    them; `usage` counts each prompt once."""
    client, tok = server.client(), checkpoint[2]
    prompts = ["Once upon", "The sea"]
    out = client.completions.create(model="ckpt", prompt=prompts, max_tokens=6, n=2, temperature=0.9, seed=3)
    refs = [expect(checkpoint, p, 6, raw=True, temperature=0.9, seed=3 + j) for p in prompts for j in range(2)]
    assert [c.index for c in out.choices] == [0, 1, 2, 3]
    assert [c.text for c in out.choices] == [r.text for r in refs]
    assert out.usage.prompt_tokens == sum(len(encode_prompt(tok, p, raw=True)) for p in prompts)
    assert out.usage.completion_tokens == sum(r.tokens for r in refs)


def test_penalties_and_bias_are_the_engines(server, checkpoint):
    """`presence_penalty`, `frequency_penalty`, `logit_bias` (token ids as JSON's string keys) and the extensions
    `repetition_penalty`, `min_p`, `min_tokens`, `ignore_eos` and `stop_token_ids`, through the official client: the
    engine's answer under the same settings."""
    client = server.client()
    plain = expect(checkpoint, chat("Hi there"), 16)
    bias = {t: -100.0 for t in plain.token_ids[:3]}
    settings = dict(presence_penalty=1.5, frequency_penalty=1.0, repetition_penalty=2.0)
    ref = expect(checkpoint, chat("Hi there"), 16, logit_bias=bias, **settings)
    assert ref.text != plain.text and not set(ref.token_ids) & set(bias)
    got = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=16, presence_penalty=1.5,
                                         frequency_penalty=1.0, logit_bias={str(t): -100 for t in bias},
                                         extra_body={"repetition_penalty": 2.0})
    assert got.choices[0].message.content == ref.text
    ref = expect(checkpoint, "Once upon", 10, raw=True, frequency_penalty=-1.0, logit_bias={5: 3.5})
    got = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=10, frequency_penalty=-1.0,
                                    logit_bias={"5": 3.5})
    assert got.choices[0].text == ref.text
    # vLLM's `min_p`: at 1 only the most likely token stays, so a sampled answer is the greedy one
    got = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=16, temperature=1.0,
                                         seed=5, extra_body={"min_p": 1.0})
    assert got.choices[0].message.content == plain.text
    # vLLM's `min_tokens` and `ignore_eos`, with the end ids biased up (the answer would end at once)
    ends = {2: 8.0, 3: 8.0}
    assert expect(checkpoint, "Once upon", 12, raw=True, logit_bias=ends).tokens < 6
    for extra in ({"min_tokens": 6}, {"ignore_eos": True}):
        ref = expect(checkpoint, "Once upon", 12, raw=True, logit_bias=ends, **extra)
        got = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=12, extra_body=extra,
                                        logit_bias={str(t): b for t, b in ends.items()})
        assert (got.choices[0].text, got.usage.completion_tokens) == (ref.text, ref.tokens) and ref.tokens > 6
    long = expect(checkpoint, "Once upon", 12, raw=True, ignore_eos=True, repetition_penalty=3.0).token_ids
    stop = next(t for i, t in enumerate(long) if i >= 2 and t not in long[:i])  # (vLLM's `stop_token_ids`)
    extra = {"ignore_eos": True, "repetition_penalty": 3.0, "stop_token_ids": [stop]}
    ref = expect(checkpoint, "Once upon", 12, raw=True, **extra)
    got = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=12, extra_body=extra)
    assert (got.choices[0].text, got.choices[0].finish_reason) == (ref.text, "stop") and ref.token_ids[-1] == stop
    for extra, param in [({"min_tokens": 13}, None), ({"min_tokens": -1}, "min_tokens"),
                         ({"ignore_eos": "yes"}, "ignore_eos"), ({"min_p": 1.5}, "min_p"),
                         ({"stop_token_ids": [len(checkpoint[2])]}, "stop_token_ids")]:
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(model="ckpt", prompt="Once upon", max_tokens=12, extra_body=extra)
        assert error_of(e)["param"] == param and next(iter(extra)) in error_of(e)["message"]


def test_vllms_request_fields(server, checkpoint):
    """vLLM's `stop_reason` (the stop token id or string that ended a choice, null at the model's own end or its
    length), `include_stop_str_in_output`, `allowed_token_ids`, `truncate_prompt_tokens`, `prompt_logprobs`,
    `return_token_ids`, `skip_special_tokens` and `bad_words`, streamed or not, through the official client: the
    engine's answers; settings the engine refuses, or that go with a schema, are a 400."""
    client = server.client()
    long = expect(checkpoint, "Once upon", 12, raw=True, ignore_eos=True, repetition_penalty=3.0)
    stop = next(t for i, t in enumerate(long.token_ids) if i >= 2 and t not in long.token_ids[:i])
    extra = {"ignore_eos": True, "repetition_penalty": 3.0, "stop_token_ids": [stop]}
    got = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=12, extra_body=extra).choices[0]
    assert (got.finish_reason, got.model_extra["stop_reason"]) == ("stop", stop)
    plain = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=3).choices[0]
    assert (plain.finish_reason, plain.model_extra["stop_reason"]) == ("length", None)
    text = long.text
    word = text[3:5]
    kept = expect(checkpoint, "Once upon", 12, raw=True, ignore_eos=True, repetition_penalty=3.0, stop=[word],
                  include_stop_str_in_output=True)
    assert kept.text == text[:text.find(word) + len(word)] and kept.stop_reason == word
    extra = {"ignore_eos": True, "repetition_penalty": 3.0, "include_stop_str_in_output": True}
    kw = dict(model="ckpt", prompt="Once upon", max_tokens=12, stop=[word], extra_body=extra)
    got = client.completions.create(**kw).choices[0]
    assert (got.text, got.finish_reason, got.model_extra["stop_reason"]) == (kept.text, "stop", word)
    chunks = [c.choices[0] for c in client.completions.create(**kw, stream=True)]
    assert "".join(c.text for c in chunks) == kept.text
    assert [c.model_extra.get("stop_reason", "absent") for c in chunks if c.finish_reason] == [word]
    allowed = sorted(set(long.token_ids[::2]))[:3]
    ref = expect(checkpoint, chat("Hi there"), 10, allowed_token_ids=allowed)
    assert set(ref.token_ids) <= set(allowed)
    got = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=10,
                                         extra_body={"allowed_token_ids": allowed})
    assert got.choices[0].message.content == ref.text
    # vLLM's `truncate_prompt_tokens`: the prompt's last k tokens are read (an echo shows them), chat's too
    _, model, tok = checkpoint
    ids = encode_prompt(tok, "Once upon a time", raw=True)
    ref = generate(model, tok, ids[-4:], DecodingConfig(max_new_tokens=6, confidence=0.5))
    got = client.completions.create(model="ckpt", prompt="Once upon a time", max_tokens=6, echo=True,
                                    extra_body={"truncate_prompt_tokens": 4})
    assert (got.choices[0].text, got.usage.prompt_tokens) == (tok.decode(ids[-4:]) + ref.text, 4)
    read = encode_prompt(tok, chat("Hi there"))
    ref = generate(model, tok, read[-5:], DecodingConfig(max_new_tokens=6, confidence=0.5))
    got = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=6,
                                         extra_body={"truncate_prompt_tokens": 5})
    assert (got.choices[0].message.content, got.usage.prompt_tokens) == (ref.text, 5)
    got = client.completions.create(model="ckpt", prompt="Once upon a time", max_tokens=2, echo=True,
                                    extra_body={"truncate_prompt_tokens": len(ids) + 5})  # (longer: all of it)
    assert got.choices[0].text.startswith("Once upon a time") and got.usage.prompt_tokens == len(ids)
    # vLLM's `prompt_logprobs`: each prompt token's entry (its own and its k most likely, by id), as the engine reads it
    ref = generate(model, tok, ids, DecodingConfig(max_new_tokens=2, confidence=0.5, prompt_logprobs=2))
    got = client.completions.create(model="ckpt", prompt="Once upon a time", max_tokens=2,
                                    extra_body={"prompt_logprobs": 2}).choices[0].model_extra["prompt_logprobs"]
    assert got[0] is None and len(got) == len(ids)
    for entry, token, lp, rank, top in zip(got[1:], ids[1:], ref.prompt_logprobs, ref.prompt_ranks,
                                           ref.prompt_alternatives):
        assert list(entry)[0] == str(token) and entry[str(token)]["rank"] == rank >= 1
        assert entry[str(token)]["logprob"] == pytest.approx(lp, abs=1e-6)
        assert entry[str(token)]["decoded_token"] == tok.decode([token])
        assert {t: (e["logprob"], e["rank"]) for t, e in entry.items()} == {
            str(token): (pytest.approx(lp, abs=1e-6), rank),
            **{str(a): (pytest.approx(v, abs=1e-6), i + 1) for i, (a, v) in enumerate(top) if a != token}}
    read = encode_prompt(tok, chat("Hi there"))
    answered = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=2,
                                              extra_body={"prompt_logprobs": 0})
    scored = answered.model_extra["prompt_logprobs"]
    assert len(scored) == len(read) and all(list(e) == [str(t)] for e, t in zip(scored[1:], read[1:]))
    # vLLM's `return_token_ids`: the prompt's and the answer's ids, streamed (each chunk's new ones) or not
    ref = generate(model, tok, ids, DecodingConfig(max_new_tokens=8, confidence=0.5))
    kw = dict(model="ckpt", prompt="Once upon a time", max_tokens=8, extra_body={"return_token_ids": True})
    got = client.completions.create(**kw).choices[0].model_extra
    assert (got["prompt_token_ids"], got["token_ids"]) == (ids, ref.token_ids)
    chunks = [c.choices[0].model_extra for c in client.completions.create(**kw, stream=True)]
    assert sum((c["token_ids"] for c in chunks), []) == ref.token_ids
    assert [c.get("prompt_token_ids") for c in chunks] == [ids] + [None] * (len(chunks) - 1)
    ref = generate(model, tok, read, DecodingConfig(max_new_tokens=8, confidence=0.5))
    kw = dict(model="ckpt", messages=chat("Hi there"), max_tokens=8, extra_body={"return_token_ids": True})
    got = client.chat.completions.create(**kw)
    assert (got.model_extra["prompt_token_ids"], got.choices[0].model_extra["token_ids"]) == (read, ref.token_ids)
    chunks = list(client.chat.completions.create(**kw, stream=True))[1:]  # (after the role's chunk)
    assert sum((c.choices[0].model_extra["token_ids"] for c in chunks), []) == ref.token_ids
    assert [c.model_extra.get("prompt_token_ids") for c in chunks] == [read] + [None] * (len(chunks) - 1)
    # vLLM's `skip_special_tokens` (false: special tokens in the text, and the logprobs' tokens that show it), and its
    # fields that clients send at their defaults
    bos = tok.bos_token_id
    extra = {"allowed_token_ids": [bos], "skip_special_tokens": False, "spaces_between_special_tokens": True,
             "use_beam_search": False}
    got = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=3, logprobs=0, extra_body=extra)
    assert got.choices[0].text == tok.bos_token * 3 and got.choices[0].logprobs.tokens == [tok.bos_token] * 3
    streamed = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=12, logprobs=0,
                                         stop=[tok.bos_token + "!"], stream=True, extra_body=extra)
    chunks = [c.choices[0] for c in streamed]
    assert all("".join(c.logprobs.tokens if c.logprobs else []) == c.text for c in chunks)  # (held back alike)
    assert "".join(c.text for c in chunks) == tok.bos_token * 12 and len(chunks) > 2
    assert client.completions.create(model="ckpt", prompt="Once upon", max_tokens=3,
                                     extra_body={"allowed_token_ids": [bos]}).choices[0].text == ""
    # vLLM's `bad_words`: the engine's answer under them
    text = expect(checkpoint, chat("Hi there"), 12).text
    words = [text[2:4], text[6]]
    ref = expect(checkpoint, chat("Hi there"), 12, bad_words=words)
    assert ref.text != text and words[0] not in ref.text and words[1] not in ref.text
    got = client.chat.completions.create(model="ckpt", messages=chat("Hi there"), max_tokens=12,
                                         extra_body={"bad_words": words})
    assert got.choices[0].message.content == ref.text
    for extra, param, says in [
            ({"bad_words": "no"}, "bad_words", "list of non-empty strings"),
            ({"spaces_between_special_tokens": False}, "spaces_between_special_tokens", "not supported"),
            ({"skip_special_tokens": 0}, "skip_special_tokens", "boolean"),
            ({"return_token_ids": "yes"}, "return_token_ids", "boolean"),
            ({"prompt_logprobs": 1, "stream": True}, "prompt_logprobs", "not available when streaming"),
            ({"prompt_logprobs": 21}, "prompt_logprobs", "prompt_logprobs"),
            ({"truncate_prompt_tokens": 0}, "truncate_prompt_tokens", "truncate_prompt_tokens"),
            ({"allowed_token_ids": []}, "allowed_token_ids", "at least one"),
            ({"allowed_token_ids": [len(checkpoint[2])]}, "allowed_token_ids", "token ids in"),
            ({"allowed_token_ids": [5], "structured_outputs": {"choice": ["a", "b"]}}, None, "cannot go with"),
            ({"allowed_token_ids": [2], "min_tokens": 2}, None, "leaves no token"),  # (the engine's refusals)
            ({"allowed_token_ids": [5], "bad_words": [tok.decode([5])]}, None, "ban every one"),
            ({"include_stop_str_in_output": 1}, "include_stop_str_in_output", "boolean")]:
        for stream in (False, True):  # (streamed too: refused before the headers, not in the stream)
            with pytest.raises(openai.BadRequestError) as e:
                client.completions.create(model="ckpt", prompt="Once upon", max_tokens=12, stream=stream,
                                          extra_body=extra)
            assert error_of(e)["param"] == param and says in error_of(e)["message"], error_of(e)


def test_logprobs_are_the_engine_probabilities(server, checkpoint):
    """Chat's `logprobs` with `top_logprobs` and the completions API's `logprobs`, streamed or not, as the official
    client reads them: one entry per token, the engine's own probabilities and alternatives."""
    client, tok = server.client(), checkpoint[2]

    def text(token: int) -> str:
        return tok.decode([token], skip_special_tokens=False)

    ref = expect(checkpoint, chat("Hi there"), 16, top_logprobs=3)
    assert max(ref.groups) > 1  # (micro tokens are among them)
    kw = dict(model="ckpt", messages=chat("Hi there"), max_tokens=16, logprobs=True, top_logprobs=3)
    content = client.chat.completions.create(**kw).choices[0].logprobs.content
    streamed = [entry for chunk in client.chat.completions.create(**kw, stream=True) if chunk.choices
                and chunk.choices[0].logprobs for entry in chunk.choices[0].logprobs.content]
    for entries in (content, streamed):
        assert [e.token for e in entries] == [text(t) for t in ref.token_ids]
        assert [e.logprob for e in entries] == pytest.approx([math.log(p) for p in ref.token_probs], abs=1e-9)
        assert [[(a.token, a.logprob) for a in e.top_logprobs] for e in entries] == [
            [(text(t), pytest.approx(lp, abs=1e-9)) for t, lp in top] for top in ref.alternatives]
        assert all(e.bytes == list(e.token.encode()) for e in entries)
    plain = client.chat.completions.create(**{**kw, "logprobs": False, "top_logprobs": None})
    assert plain.choices[0].logprobs is None
    ref = expect(checkpoint, "Once upon", 10, raw=True, top_logprobs=2)
    legacy = client.completions.create(model="ckpt", prompt="Once upon", max_tokens=10, logprobs=2).choices[0].logprobs
    assert legacy.tokens == [text(t) for t in ref.token_ids]
    assert legacy.token_logprobs == pytest.approx([math.log(p) for p in ref.token_probs], abs=1e-9)
    assert legacy.text_offset == [sum(len(text(t)) for t in ref.token_ids[:i]) for i in range(ref.tokens)]
    for chosen, top, alternatives in zip(legacy.tokens, legacy.top_logprobs, ref.alternatives):
        assert list(top)[:2] == [text(t) for t, _ in alternatives] and chosen in top


# ------------------------------------------------------------------------------ errors
def test_errors_are_openai_shaped_and_the_server_keeps_serving(server, checkpoint):
    client, too_long = server.client(), checkpoint[1].context_length + 1
    kw = dict(model="ckpt", messages=chat("Hi"), max_tokens=4)
    with pytest.raises(openai.AuthenticationError) as e:
        server.client(key="sk-wrong").chat.completions.create(**kw)
    assert error_of(e)["code"] == "invalid_api_key"
    r = httpx.post(server.url + "/v1/chat/completions", json=kw)  # no key at all
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    r = httpx.post(server.url + "/v1/chat/completions", content=b'{"messages": [', headers={
        "Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["code"] == "invalid_json"
    bad_requests = [
        (dict(temperature=3.0), "temperature"), (dict(temperature=-0.5), "temperature"),
        (dict(top_p=0.0), "top_p"), (dict(n=17), "n"), (dict(max_tokens=0), "max_tokens"),
        (dict(top_logprobs=2), "top_logprobs"), (dict(extra_body={"confidence": 0}), "confidence"),
        (dict(extra_body={"confidence": 1.5}), "confidence"), (dict(extra_body={"frobnicate": 1}), "frobnicate"),
        (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": []}}]), "tools"),
        (dict(stop=[""]), "stop"), (dict(messages=[{"role": "robot", "content": "x"}]), "messages[0].role"),
        (dict(messages=[{"role": "tool", "content": "x"}]), "messages[0]"),
        (dict(messages=[]), "messages"), (dict(messages=chat("x" * too_long)), None),
        (dict(extra_body={"mode": "fast"}), "mode"), (dict(extra_body={"reread": 1.5}), "reread"),
        (dict(presence_penalty=2.5), "presence_penalty"), (dict(frequency_penalty=-3), "frequency_penalty"),
        (dict(extra_body={"repetition_penalty": 0}), "repetition_penalty"),
        (dict(logit_bias={"5": 101}), "logit_bias"), (dict(logit_bias={"x": 1}), "logit_bias"),
        (dict(logit_bias={str(len(checkpoint[2])): 1}), "logit_bias"), (dict(logit_bias=[1]), "logit_bias"),
    ]
    for extra, param in bad_requests:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(**{**kw, **extra})
        err = error_of(e)
        assert err["param"] == param and err["type"] == "invalid_request_error", (extra, err)
        if param is None:
            assert err["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="ckpt", prompt="y" * too_long, max_tokens=2)
    assert error_of(e)["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError):  # (more prompts in one request than it may hold)
        client.completions.create(model="ckpt", prompt=["a"] * 65, max_tokens=2)
    r = httpx.get(server.url + "/v1/nope")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert client.chat.completions.create(**kw).choices[0].finish_reason in ("stop", "length")
    assert server.health()["status"] == "ok"


def wait_idle(server, timeout: float = 30.0) -> dict:
    end = time.time() + timeout
    while time.time() < end:
        health = server.health()
        if health["running"] == 0 and health["waiting"] == 0:
            return health
        time.sleep(0.05)
    pytest.fail(f"the server did not become idle: {server.health()}")


def test_full_queue_answers_429_and_gone_clients_are_dropped(server, checkpoint):
    """Streams are opened one by one (each is queued once its headers arrive): one long request runs, the
    queue fills up to --max-queue, the next one is refused; closing them all frees the server."""
    before = wait_idle(server)["cancelled"]
    body = long_body(checkpoint)
    with httpx.Client(headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as http, ExitStack() as stack:
        accepted = 0
        for _ in range(MAX_QUEUE + 10):
            r = stack.enter_context(http.stream("POST", server.url + "/v1/completions", json=body))
            if r.status_code != 200:
                break
            accepted += 1
        r.read()
        assert r.status_code == 429 and r.headers["retry-after"] == "1", r.text
        assert error_of(r) == {"message": error_of(r)["message"], "type": "rate_limit_error", "param": None,
                               "code": "queue_full"}
        health = server.health()
        assert health["waiting"] == MAX_QUEUE and health["running"] + MAX_QUEUE == accepted
    health = wait_idle(server)  # every client went away: the running rows and the waiting requests are dropped
    assert health["cancelled"] == before + accepted
    assert server.client().completions.create(model="ckpt", prompt="hi", max_tokens=3).choices[0].text


def test_client_disconnect_frees_its_row(server, checkpoint):
    before = wait_idle(server)["cancelled"]
    body = long_body(checkpoint)
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.stream("POST", server.url + "/v1/completions", json=body, headers=headers, timeout=30) as r:
        lines = 0
        for line in r.iter_lines():
            lines += bool(line.startswith("data: "))
            if lines == 3:  # mid-stream
                break
    assert wait_idle(server)["cancelled"] == before + 1
    with pytest.raises(httpx.ReadTimeout):  # a non-streamed request whose client gives up
        httpx.post(server.url + "/v1/completions", json={**body, "stream": False}, headers=headers, timeout=0.3)
    assert wait_idle(server)["cancelled"] == before + 2
    assert server.client().completions.create(model="ckpt", prompt="hi", max_tokens=3).choices[0].text


def test_a_short_request_joins_the_running_batch(server, checkpoint):
    """A and B (long) run; C (short) joins their batch (continuous batching) and is answered while they run."""
    wait_idle(server)
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(headers=headers, timeout=60) as http, ExitStack() as stack:
        batches = server.health()["batches"]
        a = stack.enter_context(http.stream("POST", server.url + "/v1/completions", json=long_body(checkpoint)))
        b = stack.enter_context(http.stream("POST", server.url + "/v1/completions", json=long_body(checkpoint)))
        answer = http.post(server.url + "/v1/completions", json={"model": "ckpt", "prompt": "abc", "max_tokens": 6})
        assert answer.status_code == 200 and answer.json()["usage"]["completion_tokens"] == 6
        end = time.time() + 5
        while (health := server.health())["running"] != 2 and time.time() < end:
            time.sleep(0.02)
        assert health["running"] == 2 and health["batches"] == batches, health  # A and B's batch still runs
        assert a.status_code == 200 and b.status_code == 200
        a.close()
        b.close()
    wait_idle(server)


# ------------------------------------------------------------------------------ load
def test_32_concurrent_streaming_clients_match_batch_one(server, checkpoint):
    prompts = [f"Question {i}: {'abcdefgh'[i % 8] * (1 + i % 5)}?" for i in range(32)]
    max_tokens = 16

    async def one(client, text):
        start, first, parts = time.perf_counter(), None, []
        stream = await client.chat.completions.create(model="ckpt", messages=chat(text), max_tokens=max_tokens,
                                                      stream=True, stream_options={"include_usage": True})
        usage = None
        async for c in stream:
            if c.choices and c.choices[0].delta.content:
                first = first or time.perf_counter() - start
                parts.append(c.choices[0].delta.content)
            usage = c.usage or usage
        return "".join(parts), usage.completion_tokens, first

    async def main():
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0, timeout=120)
        try:
            return await asyncio.gather(*(one(client, p) for p in prompts))
        finally:
            await client.close()

    start = time.perf_counter()
    outs = asyncio.run(main())
    wall = time.perf_counter() - start
    for text, (got, _, _) in zip(prompts, outs):
        assert got == expect(checkpoint, chat(text), max_tokens).text
    tokens = sum(n for _, n, _ in outs)
    print(f"\nload: {len(prompts)} streaming clients, {wall:.2f} s, {len(prompts) / wall:.1f} req/s, "
          f"{tokens / wall:.0f} completion tok/s, batches so far {server.health()['batches']}")
