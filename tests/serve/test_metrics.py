"""`GET /metrics` (`serve/metrics.py`): the answers a scheduler gives, counted, in Prometheus' text format."""

import asyncio
import re
from types import SimpleNamespace

import pytest

from hamburger.engine.generate import generate
from hamburger.engine.prompt_cache import PromptCache
from hamburger.engine.sampling import DecodingConfig
from hamburger.serve.metrics import BUCKETS, Metrics
from hamburger.serve.scheduler import Request, Scheduler
from tests.helpers import tiny_hamburger
from tests.serve.test_serve_protocol import result

SAMPLE = re.compile(r"^(hamburger_\w+)(?:\{(.*)\})? (\S+)$")


def samples(text: str) -> dict[str, float]:
    """The exposition text's samples: 'name{labels}' -> value; every other line a HELP or TYPE line."""
    out = {}
    for line in text.splitlines():
        if line.startswith("# "):
            assert re.match(r"# (HELP|TYPE) hamburger_\w+ ", line), line
            continue
        name, labels, value = SAMPLE.match(line).groups()
        out[f"{name}{{{labels or ''}}}"] = float(value)
    return out


def idle_scheduler(caches=None):
    return SimpleNamespace(prompt_caches=caches or {}, running=2, waiting=5, batches=7, cancelled=1)


def test_answers_are_counted_by_mode_and_finish_reason():
    metrics = Metrics()
    metrics.observe(result(prompt_tokens=12_345_678, cached_tokens=16, prefill_s=0.03, decode_s=0.4), "verify", 0.0)
    metrics.observe(result(finish="length", tokens=5, forwards=4), "verify", 5.0)  # (a bucket's bound: in it)
    metrics.observe(result(), "hamburger", 0.2)
    got = samples(metrics.render(idle_scheduler({"verify": PromptCache(1 << 20)})))
    assert got['hamburger_requests_total{mode="verify",finish_reason="eos"}'] == 1
    assert got['hamburger_requests_total{mode="verify",finish_reason="length"}'] == 1
    assert got['hamburger_prompt_tokens_total{mode="verify"}'] == 12_345_678 + 4  # (whole, not rounded)
    assert got['hamburger_prompt_tokens_cached_total{mode="verify"}'] == 16
    assert (got['hamburger_generation_tokens_total{mode="verify"}'], got['hamburger_base_forwards_total{mode="verify"}']
            ) == (8, 6)
    assert got['hamburger_kv_slots_total{mode="hamburger"}'] == 5
    assert got['hamburger_kv_slots_ordinary_total{mode="hamburger"}'] == 6
    queue = {float(k.split('le="')[1][:-2]): v for k, v in got.items()
             if k.startswith('hamburger_queue_seconds_bucket{mode="verify"')}
    assert queue[0.005] == 1 and queue[2.5] == 1 and queue[5.0] == 2 and queue[float("inf")] == 2
    assert len(queue) == len(BUCKETS) + 1 and got['hamburger_queue_seconds_sum{mode="verify"}'] == 5.0
    assert got['hamburger_request_seconds_sum{mode="verify"}'] == pytest.approx(0.43 + 0.3, abs=1e-6)
    assert got['hamburger_time_to_first_token_seconds_count{mode="hamburger"}'] == 1
    assert (got["hamburger_requests_running{}"], got["hamburger_requests_waiting{}"], got["hamburger_batches_total{}"],
            got["hamburger_requests_cancelled_total{}"]) == (2, 5, 7, 1)
    assert got['hamburger_prompt_cache_bytes{mode="verify"}'] == 0
    assert got['hamburger_prompt_cache_hits_total{mode="verify"}'] == 0


def test_the_scheduler_records_each_answer_it_gives(char_tokenizer):
    model = tiny_hamburger("llama", seed=5)
    cfg = DecodingConfig(max_new_tokens=6)
    scheduler = Scheduler(model, char_tokenizer, max_batch_size=2, max_queue=8).start()

    async def scenario():
        loop = asyncio.get_running_loop()
        reqs = [Request([1, 40 + k, 41], cfg, loop) for k in range(3)]
        for req in reqs:
            scheduler.submit(req)
        out = []
        for req in reqs:
            while (item := await req.queue.get())[0] != "done":
                pass
            out.append(item[1])
        return reqs, out

    try:
        reqs, results = asyncio.run(scenario())
    finally:
        scheduler.stop()
    got = samples(scheduler.metrics.render(scheduler))
    assert sum(v for k, v in got.items() if k.startswith('hamburger_requests_total{mode="hamburger"')) == 3
    assert got['hamburger_generation_tokens_total{mode="hamburger"}'] == sum(r.tokens for r in results)
    assert got['hamburger_base_forwards_total{mode="hamburger"}'] == sum(r.forwards for r in results)
    assert all(r.started is not None and r.started >= r.arrived for r in reqs)
    assert got['hamburger_queue_seconds_count{mode="hamburger"}'] == 3
    assert [r.token_ids for r in results] == [generate(model, char_tokenizer, [1, 40 + k, 41], cfg).token_ids
                                              for k in range(3)]
    assert got['hamburger_request_seconds_sum{mode="hamburger"}'] == pytest.approx(
        sum(r.prefill_s + r.decode_s for r in results), abs=1e-5)
