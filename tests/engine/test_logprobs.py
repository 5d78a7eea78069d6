"""Each token's most likely alternatives (`DecodingConfig.top_logprobs`): the top tokens of the very logits it was
chosen from (the base's, or the micro-step decoder's for a group's later tokens), in every mode and micro loop, greedy
and sampled; nothing kept when a request does not ask."""

import math

import pytest
import torch

from hamburger.engine.generate import Generation
from hamburger.engine.sampling import DecodingConfig, top_alternatives
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, tiny_long_group_model
from tests.verify_helpers import ENGINES, engine_of


def engine(kind: str, tokenizer, configs: list[DecodingConfig]):
    """`engine_of` on the first prompts, every emitted token's logits traced."""
    return engine_of(kind, tokenizer, PROMPTS[:len(configs)], configs, trace_logits=True)


@pytest.mark.parametrize("kind", ENGINES)
def test_alternatives_are_the_top_tokens_of_the_logits_each_token_was_chosen_from(kind, char_tokenizer):
    configs = [DecodingConfig(max_new_tokens=24, confidence=0.5, top_logprobs=3),  # (greedy)
               DecodingConfig(max_new_tokens=24, confidence=0.5, top_logprobs=5, temperature=1.0, seed=1),
               DecodingConfig(max_new_tokens=24, confidence=0.5)]  # (asks for none)
    gen = engine(kind, char_tokenizer, configs)
    results = gen.run()
    assert kind not in ("host", "device") or max(results[0].groups) > 1  # (micro tokens are among them)
    for cfg, result, logits in zip(configs, results, gen.logits):
        assert len(logits) == result.tokens
        if not cfg.top_logprobs:
            assert result.alternatives == []
            continue
        assert result.alternatives == [top_alternatives(row, cfg.top_logprobs) for row in logits]
        for token, prob, top in zip(result.token_ids, result.token_probs, result.alternatives):
            assert [lp for _, lp in top] == sorted((lp for _, lp in top), reverse=True)
            assert sum(math.exp(lp) for _, lp in top) <= 1.0 + 1e-6
            chosen = dict(top).get(token)
            if chosen is not None:  # the chosen token's log-probability is that of its probability
                assert chosen == pytest.approx(math.log(prob), abs=1e-5)
            if cfg.greedy:
                assert top[0][0] == token
    # the streamed events carry the same alternatives, group by group
    gen = engine(kind, char_tokenizer, configs)
    streamed = [[] for _ in configs]
    for event in gen:
        assert len(event.alternatives) == (len(event.token_ids) if configs[event.row].top_logprobs else 0)
        streamed[event.row] += event.alternatives
    assert [r.alternatives for r in gen.results] == streamed


def test_alternatives_need_no_trace_of_the_logits(char_tokenizer):
    """A row that asks keeps its alternatives without ``trace_logits``; the others keep nothing."""
    prompts = PROMPTS[:2]
    configs = [DecodingConfig(max_new_tokens=16, confidence=0.5, top_logprobs=2), DecodingConfig(max_new_tokens=16)]
    gen = Generation(tiny_long_group_model(), char_tokenizer, prompts, configs)
    asked, plain = gen.run()
    assert len(asked.alternatives) == asked.tokens and plain.alternatives == []
    assert gen.logits == [[], []]
    assert asked.token_ids == [top[0][0] for top in asked.alternatives]  # (greedy)


@pytest.mark.parametrize("bad", [-1, 21, 2.0, True])
def test_top_logprobs_out_of_range_is_refused(bad):
    with pytest.raises(HamburgerError, match="top_logprobs"):
        DecodingConfig(top_logprobs=bad).validate()


def test_top_alternatives_are_log_softmax_top_k():
    logits = torch.tensor([0.0, 2.0, 1.0, -1.0])
    top = top_alternatives(logits, 2)
    assert [t for t, _ in top] == [1, 2]
    assert [lp for _, lp in top] == pytest.approx(torch.log_softmax(logits, -1)[[1, 2]].tolist())


@pytest.mark.parametrize("kind", ENGINES + ["chunked"])
def test_prompt_logprobs_are_the_models_reading_of_the_prompt(kind, char_tokenizer):
    """`prompt_logprobs`: each prompt token's log-probability after those before it, its most likely alternatives and
    its rank, as the base's own forward over the prompt gives them; in a batch of prompts of other lengths
    (left-padded) and read a chunk at a time."""
    configs = [DecodingConfig(max_new_tokens=4, prompt_logprobs=3), DecodingConfig(max_new_tokens=4, prompt_logprobs=0),
               DecodingConfig(max_new_tokens=4)]
    if kind == "chunked":
        gen = Generation(tiny_long_group_model(), char_tokenizer, PROMPTS[:3], configs, prefill_chunk=3)
    else:
        gen = engine(kind, char_tokenizer, configs)
    for prompt, cfg, result in zip(PROMPTS, configs, gen.run()):
        if cfg.prompt_logprobs is None:
            assert result.prompt_logprobs == [] and result.prompt_alternatives == [] and result.prompt_ranks == []
            continue
        with torch.no_grad():
            logprobs = torch.log_softmax(gen.model.base(torch.tensor([prompt])).logits[0, :-1].float(), -1)
        chosen = logprobs.gather(1, torch.tensor(prompt[1:])[:, None])[:, 0]
        assert result.prompt_logprobs == pytest.approx(chosen.tolist(), abs=1e-5)
        values, ids = logprobs.topk(cfg.prompt_logprobs)
        assert [[t for t, _ in top] for top in result.prompt_alternatives] == ids.tolist()
        assert [lp for top in result.prompt_alternatives for _, lp in top] == pytest.approx(
            values.flatten().tolist(), abs=1e-5)
        order = logprobs.argsort(-1, descending=True)  # (each token's rank: its place in that order, from 1)
        assert result.prompt_ranks == [int((o == t).nonzero()) + 1 for o, t in zip(order, prompt[1:])]
        assert min(result.prompt_ranks) >= 1 and max(result.prompt_ranks) > 1


def test_prompt_logprobs_out_of_range_are_refused():
    for bad in (-1, 21, True, 1.5):
        with pytest.raises(HamburgerError, match="prompt_logprobs"):
            DecodingConfig(prompt_logprobs=bad).validate()
