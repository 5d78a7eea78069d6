"""vLLM's `bad_words` (`engine/bad_words.py`): the spellings read, what a ban looks back at, and every engine's answers
never holding a banned spelling, greedy and sampled."""

import pytest
import torch

from hamburger.engine.bad_words import BadWords, spellings
from hamburger.engine.generate import Generation
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, tiny_long_group_model
from tests.verify_helpers import ENGINES, engine_of


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_spellings_are_the_word_alone_and_after_a_space(char_tokenizer):
    assert spellings(["ab", " ab", "c"], char_tokenizer) == [ids(char_tokenizer, "ab"), ids(char_tokenizer, " ab"),
                                                             ids(char_tokenizer, "c"), ids(char_tokenizer, " c")]
    for word in ("", "  ", 7):
        with pytest.raises(HamburgerError, match="bad_words"):
            spellings([word], char_tokenizer)


def test_a_ban_looks_back_at_the_rest_of_its_spelling():
    """A one-token spelling is always banned; a longer one's last token only after the rest of it, in the answer or in
    the drafts before a verify position."""
    words = BadWords([[5], [7, 8], [9, 7, 8]], vocab=10)
    assert words.banned() == [5]
    words.add(7)
    assert words.banned() == [5, 8] and words.banned(after=[1]) == [5] and words.banned(after=[9, 7]) == [5, 8]
    logits = torch.zeros(10)
    assert torch.isinf(words(logits)).nonzero().flatten().tolist() == [5, 8]
    assert torch.equal(BadWords([[7, 8]], 10)(logits), logits)  # (nothing banned: as it was)
    only = torch.full((10,), -torch.inf).index_fill(0, torch.tensor([5, 8]), 0.0)  # (other settings allow 5 and 8)
    assert torch.equal(words(only), only)  # a ban that leaves no token yields
    assert torch.isinf(words(only, after=[1])).nonzero().flatten().tolist() == [i for i in range(10) if i != 8]
    with pytest.raises(HamburgerError, match="outside the vocabulary"):
        BadWords([[10]], vocab=10)


@pytest.mark.parametrize("kind", [k for k in ENGINES if k != "device"])  # (the device loop refuses them: below)
def test_no_engine_writes_a_bad_word(kind, char_tokenizer):
    """A pair of characters the answer held, and one character, banned: no answer holds the pair (nor it after a space)
    or the character, greedy or sampled, micro tokens and drafts alike; the rest of the answer is free to differ."""
    cfg = dict(max_new_tokens=24, confidence=0.5, repetition_penalty=3.0)  # (an answer of many characters)
    plain = engine_of(kind, char_tokenizer, [PROMPTS[1]], [DecodingConfig(**cfg)]).run()[0]
    text = char_tokenizer.decode(plain.token_ids, skip_special_tokens=True)
    pair = next(text[i:i + 2] for i in range(len(text) - 1) if text[i:i + 2].strip() == text[i:i + 2])
    single = next(c for c in text if c.strip() and c not in pair)
    configs = [DecodingConfig(**cfg, bad_words=[pair, single], **extra) for extra in ({}, {"temperature": 1.0,
                                                                                         "seed": 4})]
    results = engine_of(kind, char_tokenizer, [PROMPTS[1]] * 2, configs).run()
    banned = ids(char_tokenizer, pair)
    for result in results:
        held = result.token_ids
        assert not any(held[i:i + 2] == banned for i in range(len(held) - 1)), (pair, held)
        assert ids(char_tokenizer, single)[0] not in held
    assert results[0].token_ids != plain.token_ids
    assert kind != "host" or max(results[0].groups) > 1  # (micro tokens are among them)


@pytest.mark.parametrize("kind", [k for k in ENGINES if k != "device"])
def test_allowed_ids_come_before_a_bad_word(kind, char_tokenizer):
    """One id allowed and its pair banned: each position after the first has no token but the banned one, so the ban
    yields and the answer holds the allowed id only (not an id nothing allowed), greedy and sampled."""
    x = ids(char_tokenizer, "x")
    configs = [DecodingConfig(max_new_tokens=8, confidence=0.5, allowed_token_ids=x, bad_words=["xx"], **extra)
               for extra in ({}, {"temperature": 1.0, "seed": 4})]
    for result in engine_of(kind, char_tokenizer, [PROMPTS[1]] * 2, configs).run():
        assert result.token_ids == x * 8


def test_bad_words_are_checked(char_tokenizer):
    for value in ([""], "ab", [3]):
        with pytest.raises(HamburgerError, match="bad_words"):
            DecodingConfig(bad_words=value).validate()
    with pytest.raises(HamburgerError, match="bad_words cannot go with"):
        DecodingConfig(bad_words=["a"], json_schema={"type": "object"}).validate()
    model = tiny_long_group_model()
    with pytest.raises(HamburgerError, match="ban every one of allowed_token_ids"):
        Generation(model, char_tokenizer, [PROMPTS[0]],
                   DecodingConfig(bad_words=["a"], allowed_token_ids=ids(char_tokenizer, "a")))
    eos = char_tokenizer.eos_token_id
    with pytest.raises(HamburgerError, match="min_tokens with the allowed_token_ids that bad_words leave"):
        Generation(model, char_tokenizer, [PROMPTS[0]],
                   DecodingConfig(bad_words=["a"], allowed_token_ids=[*ids(char_tokenizer, "a"), eos], min_tokens=2))
    Generation(model, char_tokenizer, [PROMPTS[0]],  # (without min_tokens the end is a token to choose)
               DecodingConfig(bad_words=["a"], allowed_token_ids=[*ids(char_tokenizer, "a"), eos]))
    with pytest.raises(HamburgerError, match="micro_loop 'host'"):
        Generation(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(confidence=0.5, bad_words=["a"]),
                   micro_loop="device").run()
