"""The serving scheduler admits waiting requests into the running batch (continuous batching)."""

import asyncio

import torch

from hamburger.engine.generate import generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.serve.scheduler import Refused, Request, Scheduler
from tests.helpers import tiny_hamburger


def test_request_joins_the_running_batch(char_tokenizer):
    model = tiny_hamburger("llama", seed=5)
    model.base.generation_config.eos_token_id = [99]
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(3.0)  # one token per group: many macro steps
    scheduler = Scheduler(model, char_tokenizer, max_batch_size=4, max_queue=8).start()
    long_cfg, short_cfg = DecodingConfig(max_new_tokens=200, confidence=0.5), DecodingConfig(max_new_tokens=4)

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
    from hamburger.engine.generate import Generation

    model = tiny_hamburger("llama", seed=5)
    model.base.generation_config.eos_token_id = [99]
    cfg = DecodingConfig(max_new_tokens=3)
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


def test_modes_run_in_batches_of_their_own(char_tokenizer):
    """Verify-mode requests run the verify engine (the base's greedy output, also drafting by the scheduler's prompt
    lookup and n-gram table), verify_fold ones the verify engine with the scheduler's folding, merged ones the
    HAMburger engine; a waiting request of another mode ends admission, so it is served next, not after the whole
    queue."""
    from hamburger.engine.folding import Folding
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.ngrams import NgramDrafts
    from hamburger.engine.verify import VerifyGeneration, verify_generate

    model = tiny_hamburger("llama", seed=5)
    model.base.generation_config.eos_token_id = [99]
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-1.0)
    fold, lookup = Folding(window=0, groups="forwards"), PromptLookup(tokens=4, min_ngram=1)
    ngrams = NgramDrafts(100, {1: {t: t + 1 for t in range(40, 90)}})  # (drafts, mostly wrong, where lookup can't)
    scheduler = Scheduler(model, char_tokenizer, max_batch_size=4, max_queue=8, fold=fold, lookup=lookup,
                          ngrams=ngrams).start()
    cfg = DecodingConfig(max_new_tokens=12, confidence=0.5)
    prompts = {"a": [1, 40, 41], "b": [1, 50, 51, 52], "c": [1, 60, 61], "d": [1, 70], "e": [1, 80, 81, 80, 81],
               "f": [1, 40, 41, 40]}
    modes = {"a": "hamburger", "b": "verify", "c": "hamburger", "d": "verify", "e": "verify_fold", "f": "verify_fold"}

    async def scenario():
        loop = asyncio.get_running_loop()
        reqs = {k: Request(p, cfg, loop, mode=modes[k]) for k, p in prompts.items()}
        for r in reqs.values():
            scheduler.submit(r)
        out = {}
        for k, r in reqs.items():
            while (item := await r.queue.get())[0] != "done":
                assert item[0] == "event"
            out[k] = item[1]
        return out

    try:
        out = asyncio.run(scenario())
    finally:
        scheduler.stop()
    for k, p in prompts.items():
        if modes[k] == "verify":
            assert out[k].token_ids == verify_generate(model, char_tokenizer, p, cfg).token_ids
            assert out[k].kv_slots == out[k].kv_slots_ordinary and not out[k].folded
        elif modes[k] == "verify_fold":
            want = VerifyGeneration(model, char_tokenizer, [p], cfg, fold=fold, lookup=lookup, ngrams=ngrams).run()[0]
            assert (out[k].token_ids, out[k].kv_slots, out[k].looked_up) == (want.token_ids, want.kv_slots,
                                                                             want.looked_up)
            assert out[k].folded
        else:
            assert out[k].token_ids == generate(model, char_tokenizer, p, cfg).token_ids
    assert any(any(out[k].looked_up) for k in "bdef"), "the test needs lookup drafts"
    assert any(out[k].kv_slots < out[k].kv_slots_ordinary for k in "ef"), "the test needs folds"
    assert scheduler.batches >= 3


def test_a_batch_takes_the_oldest_request_and_those_of_its_mode(char_tokenizer):
    model = tiny_hamburger("llama", seed=5)
    scheduler = Scheduler(model, char_tokenizer, max_batch_size=2, max_queue=8)  # not started: _take by hand
    loop = asyncio.new_event_loop()
    try:
        reqs = [Request([1, 40 + i], DecodingConfig(), loop, mode=m)
                for i, m in enumerate(["verify", "hamburger", "verify", "verify", "hamburger"])]
        for r in reqs:
            scheduler.submit(r)
        assert scheduler._take() == [reqs[0], reqs[2]]  # two rows at most; the others keep their order
        assert list(scheduler._waiting) == [reqs[1], reqs[3], reqs[4]]
        assert scheduler._take() == [reqs[1], reqs[4]]
        assert scheduler._take() == [reqs[3]]
    finally:
        loop.close()


def test_a_request_the_engine_refuses_fails_alone(char_tokenizer):
    """Settings the engine refuses (`Generation.add`), first in a batch or later in it, fail that request with `Refused`
    (the server's 400); the batch's other requests get their answers."""
    model = tiny_hamburger("llama", seed=5)
    model.base.generation_config.eos_token_id = [99]
    scheduler = Scheduler(model, char_tokenizer, max_batch_size=4, max_queue=8)  # not started: _run by hand
    refused = [DecodingConfig(allowed_token_ids=[99], min_tokens=2), DecodingConfig(stop_token_ids=[10 ** 6])]
    good = DecodingConfig(max_new_tokens=5)

    async def scenario():
        loop = asyncio.get_running_loop()
        reqs = [Request([1, 40], refused[0], loop), Request([1, 41], good, loop), Request([1, 42], refused[1], loop)]
        for r in reqs:
            scheduler.submit(r)
        await asyncio.to_thread(scheduler._run, scheduler._take())
        out = []
        for r in reqs:
            while (item := await r.queue.get())[0] == "event":
                pass
            out.append(item)
        return out

    (k0, e0), (k1, result), (k2, e2) = asyncio.run(scenario())
    assert (k0, k2, k1) == ("error", "error", "done") and isinstance(e0, Refused) and isinstance(e2, Refused)
    assert "leaves no token" in str(e0) and "stop_token_ids" in str(e2)
    assert result.token_ids == generate(model, char_tokenizer, [1, 41], good).token_ids


def test_verify_modes_draft_over_the_checkpoints_draft_vocabulary(char_tokenizer):
    from hamburger.engine.verify import on_base

    model = tiny_hamburger("llama", seed=5)
    model.draft_vocab = torch.tensor([4, 7, 40])
    scheduler = Scheduler(model, char_tokenizer, verify_model=on_base(model, tiny_hamburger("llama", seed=5)))
    for mode in ("verify", "verify_fold"):
        assert scheduler._engine(mode).keywords["draft_vocab"].tolist() == [4, 7, 40]
