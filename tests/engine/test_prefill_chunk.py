"""Chunked prefill: a long prompt is read a chunk per macro step, between the running rows' steps; the
tokens are the same as with the whole prompt at once, and short requests no longer wait behind it."""

import asyncio

import pytest
import torch

from hamburger.errors import HamburgerError
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.serve.scheduler import Request, Scheduler
from tests.helpers import tiny_hamburger


def model_with_short_groups():
    model = tiny_hamburger("llama", seed=5)
    model.base.generation_config.eos_token_id = [99]
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(1.0)
    return model


def prompt(n: int, start: int = 0) -> list[int]:
    return [1] + [4 + (7 * k + start) % 95 for k in range(n - 1)]


def test_chunked_prefill_gives_the_same_tokens(char_tokenizer):
    model = model_with_short_groups()
    prompts = [prompt(37), prompt(5, 3), prompt(64, 11), prompt(8, 5)]
    cfg = DecodingConfig(max_new_tokens=12, confidence=0.6)
    whole = Generation(model, char_tokenizer, prompts, cfg).run()
    for chunk in (1, 8, 16, 64):
        chunked = Generation(model, char_tokenizer, prompts, cfg, prefill_chunk=chunk).run()
        for a, b in zip(whole, chunked):
            assert (a.token_ids, a.groups, a.finish_reason, a.kv_slots) == (b.token_ids, b.groups, b.finish_reason,
                                                                            b.kv_slots), chunk
    for p in prompts:  # and the same as batch 1
        assert generate(model, char_tokenizer, p, cfg).token_ids == \
            Generation(model, char_tokenizer, [p], cfg, prefill_chunk=8).run()[0].token_ids
    with pytest.raises(HamburgerError):
        Generation(model, char_tokenizer, prompts, cfg, prefill_chunk=0)


def test_a_short_row_runs_while_a_long_prompt_is_read(char_tokenizer):
    model = model_with_short_groups()
    long_p, short_p = prompt(60), prompt(3, 9)
    cfg = DecodingConfig(max_new_tokens=10, confidence=1.0)  # one token per group: one event per step
    run = Generation(model, char_tokenizer, [long_p, short_p], cfg, prefill_chunk=4)
    order = [e.row for e in run]
    first_long = order.index(0)
    assert order[:first_long] == [1] * first_long and first_long >= 10  # the short row finished meanwhile
    assert run.results[0].token_ids == generate(model, char_tokenizer, long_p, cfg).token_ids
    assert run.results[1].token_ids == generate(model, char_tokenizer, short_p, cfg).token_ids


def test_a_row_cancelled_while_its_prompt_is_read_is_dropped(char_tokenizer):
    model = model_with_short_groups()
    cfg = DecodingConfig(max_new_tokens=6, confidence=1.0)
    polls = []

    def poll():
        polls.append(1)
        if len(polls) == 2:
            run.cancel(0)

    run = Generation(model, char_tokenizer, [prompt(80), prompt(4, 2)], cfg, prefill_chunk=8, poll=poll)
    rows = [e.row for e in run]
    assert 0 not in rows and run.results[0].finish_reason == "cancelled" and run.results[0].tokens == 0
    assert run.results[1].token_ids == generate(model, char_tokenizer, prompt(4, 2), cfg).token_ids


def test_scheduler_answers_a_short_request_before_a_long_prompt_is_read(char_tokenizer):
    model = model_with_short_groups()
    long_cfg, short_cfg = DecodingConfig(max_new_tokens=4, confidence=1.0), DecodingConfig(max_new_tokens=3)
    scheduler = Scheduler(model, char_tokenizer, max_batch_size=4, max_queue=8, prefill_chunk=3).start()

    async def scenario():
        loop = asyncio.get_running_loop()
        long_req = Request(prompt(900), long_cfg, loop)
        scheduler.submit(long_req)
        while scheduler.running == 0:  # the long prompt is being read, chunk by chunk
            await asyncio.sleep(0.001)
        short_req = Request(prompt(4, 1), short_cfg, loop)
        scheduler.submit(short_req)
        while (item := await short_req.queue.get())[0] != "done":
            pass
        assert long_req.queue.empty(), "the short request was answered before the long prompt's first group"
        while (last := await long_req.queue.get())[0] != "done":
            pass
        return item[1], last[1]

    try:
        short_result, long_result = asyncio.run(scenario())
    finally:
        scheduler.stop()
    assert short_result.token_ids == generate(model, char_tokenizer, prompt(4, 1), short_cfg).token_ids
    assert long_result.token_ids == generate(model, char_tokenizer, prompt(900), long_cfg).token_ids
