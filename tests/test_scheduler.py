"""The serving scheduler admits waiting requests into the running batch (continuous batching)."""

import asyncio

import torch

from hamburger.generate import generate
from hamburger.sampling import GenerationConfig
from hamburger.scheduler import Request, Scheduler
from tests.conftest import tiny_hamburger


def test_request_joins_the_running_batch(char_tokenizer):
    model = tiny_hamburger("llama", seed=5)
    model.base.generation_config.eos_token_id = [99]
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(3.0)  # one token per group: many macro steps
    scheduler = Scheduler(model, char_tokenizer, max_batch_size=4, max_queue=8).start()
    long_cfg, short_cfg = GenerationConfig(max_new_tokens=200, confidence=0.5), GenerationConfig(max_new_tokens=4)

    async def scenario():
        loop = asyncio.get_running_loop()
        long_req = Request([1, 40, 41], long_cfg, loop)
        scheduler.submit(long_req)
        kind, _ = await long_req.queue.get()  # the long request is running
        assert kind == "event"
        short_req = Request([1, 50, 51, 52], short_cfg, loop)
        scheduler.submit(short_req)
        while (item := await short_req.queue.get())[0] != "done":
            pass
        short_result = item[1]
        assert scheduler.batches == 0, "the short request was served inside the long request's batch"
        while (item := await long_req.queue.get())[0] != "done":
            pass
        return short_result, item[1]

    try:
        short_result, long_result = asyncio.run(scenario())
    finally:
        scheduler.stop()
    assert short_result.token_ids == generate(model, char_tokenizer, [1, 50, 51, 52], short_cfg).token_ids
    assert long_result.token_ids == generate(model, char_tokenizer, [1, 40, 41], long_cfg).token_ids


def test_release_forgets_finished_rows_of_a_long_running_batch(char_tokenizer):
    """The scheduler releases each row once answered: a batch kept open by continuous traffic holds no history."""
    from hamburger.generate import Generation

    model = tiny_hamburger("llama", seed=5)
    model.base.generation_config.eos_token_id = [99]
    cfg = GenerationConfig(max_new_tokens=3)
    run = Generation(model, char_tokenizer, [[1, 40, 41]], cfg)
    answered = []
    for event in run:
        if event.finish_reason:
            answered.append(run.result(event.row))
            run.release(event.row)
            assert run.rows[event.row].tokens == [] and run.rows[event.row].prompt_ids == []
            if len(run.rows) < 5:
                run.add([1, 50 + len(run.rows), 51], cfg)
    assert run.active_rows == 0 and not run._kept and len(answered) == 5
    for i, result in enumerate(answered):
        prompt = [1, 40, 41] if i == 0 else [1, 50 + i, 51]
        assert result.token_ids == generate(model, char_tokenizer, prompt, cfg).token_ids
