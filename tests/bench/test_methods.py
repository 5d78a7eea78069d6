"""Bench methods that sample (seeded alike on every prompt, so a sampled run can be repeated) and HF's assisted
generation (the base's own greedy answer, drafted by another model)."""

import copy

import pytest
import torch

from hamburger.bench.methods import HFMethod, VerifyMethod, assisted_kwargs
from hamburger.engine.prompt import encode_prompt
from hamburger.errors import HamburgerError
from tests.helpers import CHARS, SPECIALS, make_char_tokenizer, tiny_base, tiny_long_group_model

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


def test_assisted_generation_writes_the_base_greedy_answer(char_tokenizer):
    """The assisted method is lossless: whatever drafts, the base's greedy tokens come out. A copy of the base
    drafts every token right, so each base forward keeps several (its drafting forwards are not the base's); an
    assistant with another vocabulary drafts by text (HF's universal assisted decoding)."""
    base = tiny_base(seed=0)
    with torch.no_grad():  # (argmaxes far from ties: a multi-token forward keeps the one-token forwards' choices)
        base.get_input_embeddings().weight.mul_(4.0)
    prompts = [encode_prompt(char_tokenizer, p) for p in ("abc", "hello there", "2+2=")]
    greedy = [HFMethod(base, char_tokenizer).run(p, 16) for p in prompts]
    other = make_char_tokenizer(SPECIALS + CHARS + [chr(c) for c in range(0xe0, 0xf4)])
    for assistant, tokenizer in ((copy.deepcopy(base), char_tokenizer), (tiny_base(seed=2, vocab=120), other)):
        kwargs = assisted_kwargs(base, char_tokenizer, assistant, tokenizer)
        assert ("assistant_tokenizer" in kwargs) == (tokenizer is other)
        assisted = [HFMethod(base, char_tokenizer, "assisted", **kwargs).run(p, 16) for p in prompts]
        assert [r.token_ids for r in assisted] == [r.token_ids for r in greedy]
        if tokenizer is char_tokenizer:
            assert all(r.forwards < r.tokens for r in assisted) and all(r.forwards == r.tokens for r in greedy)


def test_assisted_generation_refuses_other_ids_of_one_vocabulary_size(char_tokenizer):
    """An assistant whose vocabulary is the base's size reads its drafts as the base's ids: another tokenizer there
    would draft nonsense that HF cannot tell, so it is refused."""
    base = tiny_base(seed=0)
    shuffled = make_char_tokenizer(SPECIALS + CHARS[::-1])
    with pytest.raises(HamburgerError, match="other ids"):
        assisted_kwargs(base, char_tokenizer, tiny_base(seed=1), shuffled)
