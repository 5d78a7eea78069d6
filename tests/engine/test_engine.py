"""The generation engine's equalities on tiny random models."""

from dataclasses import replace

import pytest
import torch

from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from tests.helpers import PROMPTS, assert_engine_matches_training_forward, hf_greedy, tiny_hamburger


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_confidence_one_equals_base_greedy(family, char_tokenizer):
    model = tiny_hamburger(family)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=24, confidence=1.0))
        assert res.token_ids == hf_greedy(model.base, prompt, 24)
        assert res.groups == [1] * res.tokens
        assert res.tau == 1.0


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_incremental_logits_equal_training_forward(family, char_tokenizer):
    assert_engine_matches_training_forward(tiny_hamburger(family, seed=3), char_tokenizer)


def test_kv_slots_and_bytes_follow_groups(char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)
    prompt = PROMPTS[1]
    res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=0.5))
    plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=30, confidence=1.0))
    assert res.kv_slots == len(prompt) + len(res.groups) - 1
    assert res.forwards == len(res.groups)
    assert plain.kv_slots == len(prompt) + plain.tokens - 1 == plain.kv_slots_ordinary
    per_slot = plain.kv_bytes / plain.kv_slots
    assert res.kv_bytes == res.kv_slots * per_slot
    if res.tokens == plain.tokens:
        assert res.kv_bytes < plain.kv_bytes
    assert res.kv_bytes_ordinary == res.kv_slots_ordinary * per_slot


def test_eos_inside_group_ends_output(char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-5.0)
    free = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=40, confidence=0.5))
    assert max(free.groups) > 1
    # Declare the 3rd emitted token an end-of-sequence id: the output must end right there.
    target = free.token_ids[2]
    model.base.generation_config.eos_token_id = [2, 3, target]
    try:
        res = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=40, confidence=0.5))
    finally:
        model.base.generation_config.eos_token_id = [2, 3]
    first = free.token_ids.index(target)
    assert res.token_ids == free.token_ids[:first + 1]
    assert res.finish_reason == "eos" and sum(res.groups) == res.tokens


@pytest.mark.parametrize("n", [1, 2, 3, 7, 13])
def test_never_exceeds_max_new_tokens(n, char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-5.0)
    model.base.generation_config.eos_token_id = [3]
    res = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=n, confidence=0.3))
    assert res.tokens <= n and sum(res.groups) == res.tokens
    if res.finish_reason == "length":
        assert res.tokens == n


def test_sampling_seeded_reproducible_and_cold_limit_is_greedy(char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.6, temperature=1.0, top_p=0.9, top_k=20, seed=7)
    a = generate(model, char_tokenizer, PROMPTS[0], cfg)
    b = generate(model, char_tokenizer, PROMPTS[0], cfg)
    assert a.token_ids == b.token_ids and a.groups == b.groups
    greedy = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=0.6))
    cold = generate(model, char_tokenizer, PROMPTS[0],
                    DecodingConfig(max_new_tokens=20, confidence=0.6, temperature=1e-6, seed=1))
    assert cold.token_ids == greedy.token_ids


def test_stop_strings_cut_text_and_stream_matches(char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    full = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=30, confidence=0.7))
    text = full.text
    assert len(text) > 6
    stop = text[4:6]
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.7, stop=[stop])
    run = Generation(model, char_tokenizer, [PROMPTS[0]], cfg)
    streamed = "".join(event.text for event in run)
    res = run.results[0]
    assert (res.finish_reason, res.stop_reason) == ("stop", stop) and full.stop_reason is None
    assert res.text == text[:text.find(stop)]
    assert streamed == res.text
    kept = Generation(model, char_tokenizer, [PROMPTS[0]], replace(cfg, include_stop_str_in_output=True))
    streamed = "".join(event.text for event in kept)
    assert streamed == kept.results[0].text == text[:text.find(stop) + len(stop)]
    assert (kept.results[0].finish_reason, kept.results[0].stop_reason) == ("stop", stop)


def test_streaming_yields_every_group(char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    run = Generation(model, char_tokenizer, [PROMPTS[1]], DecodingConfig(max_new_tokens=25, confidence=0.5))
    events = list(run)
    res = run.results[0]
    assert [len(e.token_ids) for e in events] == res.groups
    assert sum((e.token_ids for e in events), []) == res.token_ids
    assert "".join(e.text for e in events) == res.text
    assert events[-1].finish_reason == res.finish_reason


def test_batch_equals_single_runs(char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)
    cfg = DecodingConfig(max_new_tokens=18, confidence=0.5)
    batch = Generation(model, char_tokenizer, PROMPTS, cfg).run()
    for prompt, res in zip(PROMPTS, batch):
        single = generate(model, char_tokenizer, prompt, cfg)
        assert res.token_ids == single.token_ids and res.groups == single.groups
        assert res.kv_slots == single.kv_slots


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_static_cache_decodes_like_the_dynamic_one(family, char_tokenizer):
    """The preallocated (static) slot cache gives the same tokens and groups as the growing one, in a batch
    whose rows finish at different times, and holds its full capacity in memory."""
    model = tiny_hamburger(family, seed=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)  # make long groups likely
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.5) for n in (20, 7, 13)]
    dynamic_run = Generation(model, char_tokenizer, PROMPTS, cfgs)
    static_run = Generation(model, char_tokenizer, PROMPTS, cfgs, static_cache=True)
    dynamic, static = dynamic_run.run(), static_run.run()
    assert max(g for r in dynamic for g in r.groups) > 1
    assert static_run.peak_kv_bytes > dynamic_run.peak_kv_bytes  # allocated for the longest possible answer
    for d, s in zip(dynamic, static):
        assert (s.token_ids, s.groups, s.kv_slots) == (d.token_ids, d.groups, d.kv_slots)
    one = generate(model, char_tokenizer, PROMPTS[0], DecodingConfig(max_new_tokens=20, confidence=1.0))
    assert Generation(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=20, confidence=1.0),
                      static_cache=True).run()[0].token_ids == one.token_ids == hf_greedy(model.base, PROMPTS[0], 20)


def test_compiled_macro_steps_decode_like_eager(char_tokenizer):
    """`compile_decoding` traces the macro step (taps included) on a static cache; same tokens and groups.
    The eager backend checks the traced graph here; inductor and CUDA graphs are for a GPU."""
    model = tiny_hamburger("llama", seed=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)
    cfg = DecodingConfig(max_new_tokens=16, confidence=0.5)
    eager = generate(model, char_tokenizer, PROMPTS[1], cfg)
    model.compile_decoding(mode=None, backend="eager")
    compiled = Generation(model, char_tokenizer, [PROMPTS[1]], cfg, static_cache=True).run()[0]
    assert max(eager.groups) > 1
    assert (compiled.token_ids, compiled.groups) == (eager.token_ids, eager.groups)
