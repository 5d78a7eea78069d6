"""Bench methods that sample: seeded alike on every prompt, so a sampled run can be repeated."""

from hamburger.bench.methods import HFMethod, VerifyMethod
from hamburger.engine.prompt import encode_prompt
from tests.helpers import tiny_long_group_model

SAMPLING = dict(temperature=0.7, top_p=0.9)


def test_sampling_methods_repeat_their_tokens_and_differ_from_greedy(char_tokenizer):
    model = tiny_long_group_model()
    prompts = [encode_prompt(char_tokenizer, p) for p in ("abc", "hello there", "2+2=")]
    for make in (lambda s: HFMethod(model.base, char_tokenizer, sampling=s),
                 lambda s: VerifyMethod(model, char_tokenizer, confidence=0.3, sampling=s)):
        sampled, greedy = make(SAMPLING), make(None)
        first = [sampled.run(p, 12).token_ids for p in prompts]
        assert [sampled.run(p, 12).token_ids for p in prompts] == first
        assert first != [greedy.run(p, 12).token_ids for p in prompts]
    assert HFMethod(model.base, char_tokenizer, sampling=SAMPLING).sampling == dict(do_sample=True, top_k=0,
                                                                                    **SAMPLING)
