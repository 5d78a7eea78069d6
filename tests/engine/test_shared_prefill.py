"""Rows with the same prompt (a request's `n` answers) share one reading of it: the prefill forward, or a long prompt's
chunks, run once per distinct prompt and each row gets a copy; every row decodes as it would alone."""

import pytest

from hamburger.engine.generate import Generation
from hamburger.engine.sampling import DecodingConfig
from tests.helpers import PROMPTS, tiny_long_group_model
from tests.verify_helpers import engine_of

LONG = [1] + [4 + (7 * k) % 95 for k in range(20)]


def forward_batches(gen) -> list[tuple[int, int]]:
    """(rows, positions) of each base forward ``gen`` runs (recorded as it runs)."""
    seen, forward = [], gen.model.base_forward

    def recording(inputs_embeds, *args, **kwargs):
        seen.append(tuple(inputs_embeds.shape[:2]))
        return forward(inputs_embeds, *args, **kwargs)
    gen.model.base_forward = recording
    return seen


SAMPLED = [DecodingConfig(max_new_tokens=16, confidence=0.5, temperature=1.0, seed=s) for s in (1, 2, 3)]
CONFIGS = [SAMPLED[0], DecodingConfig(max_new_tokens=16, confidence=0.5, prompt_logprobs=2), *SAMPLED[1:]]


@pytest.mark.parametrize("kind", ["host", "verify", "verify_fold"])
@pytest.mark.parametrize("chunk", [None, 6])
def test_rows_with_one_prompt_read_it_once_and_decode_as_alone(kind, chunk, char_tokenizer):
    prompt = LONG if chunk else PROMPTS[1]
    prompts = [prompt, PROMPTS[0], prompt, prompt]  # three answers to one prompt (seeds 1-3), and another prompt
    gen = engine_of(kind, char_tokenizer, prompts, CONFIGS, prefill_chunk=chunk)
    batches = forward_batches(gen)
    results = gen.run()
    if chunk:  # the short prompt whole, the long one a chunk of 6 positions per step, once for its three rows
        assert batches[0] == (1, len(PROMPTS[0])) and batches.count((1, chunk)) == len(LONG) // chunk
    else:  # one forward over the two distinct prompts
        assert batches[0] == (2, len(prompt))
    assert len({tuple(r.token_ids) for r in results[:1] + results[2:]}) == 3  # (the seeds still draw apart)
    for p, cfg, result in zip(prompts, CONFIGS, results):
        alone = engine_of(kind, char_tokenizer, [p], [cfg]).run()[0]
        assert (result.token_ids, result.groups, result.prompt_logprobs) == (alone.token_ids, alone.groups,
                                                                            alone.prompt_logprobs)


def test_a_cancelled_row_leaves_its_shared_reading_to_the_others(char_tokenizer):
    cfgs = [DecodingConfig(max_new_tokens=8, confidence=0.5)] * 3
    gen = Generation(tiny_long_group_model(), char_tokenizer, [LONG] * 3, cfgs, prefill_chunk=4)
    gen.cancel(1)
    results = gen.run()
    alone = Generation(tiny_long_group_model(), char_tokenizer, [LONG], cfgs[:1]).run()[0]
    assert results[1].finish_reason == "cancelled"
    assert results[0].token_ids == results[2].token_ids == alone.token_ids


def test_a_static_cache_takes_copies_too(char_tokenizer):
    cfgs = [DecodingConfig(max_new_tokens=10, confidence=0.5)] * 2
    model = tiny_long_group_model()
    shared = Generation(model, char_tokenizer, [PROMPTS[2]] * 2, cfgs, static_cache=True).run()
    alone = Generation(model, char_tokenizer, [PROMPTS[2]], cfgs[:1], static_cache=True).run()[0]
    assert shared[0].token_ids == shared[1].token_ids == alone.token_ids
