"""Incremental detokenization gives exactly the full decoding, group by group, and decodes only a window."""

import random

import pytest

from hamburger.engine.detok import CONTEXT, Detokenizer

TEXTS = ["héllo 世界 🤖🍔 naïve  x\n\ty", "  two  spaces, then\n\nnewlines; ünïcödé — dashes… “quotes” 🇫🇷 €5",
         "def f(x):\n    return x ** 2  # ok\n", "日本語のテキストと emoji 👩‍👩‍👧 mixed"]


@pytest.fixture(scope="module")
def smollm_tokenizer():
    """The bundled base's tokenizer (byte-level BPE: multi-byte characters split over tokens)."""
    from transformers import AutoTokenizer

    from hamburger.core.base import resolve_base

    return AutoTokenizer.from_pretrained(resolve_base(None)[1])


def check_groups(tokenizer, ids: list[int], seed: int) -> None:
    rng = random.Random(seed)
    detok, done = Detokenizer(tokenizer), 0
    while done < len(ids):
        done = min(len(ids), done + rng.randint(1, 4))
        full = tokenizer.decode(ids[:done], skip_special_tokens=True)
        assert detok.update(ids[:done]) == full
        assert full.startswith(full[:detok.kept]) and detok.kept <= len(full)


def test_char_tokenizer_text_is_exact(char_tokenizer):
    for seed, text in enumerate(TEXTS[2:3] + ["abc def\n ghi"]):
        ids = char_tokenizer(text, add_special_tokens=False)["input_ids"]
        check_groups(char_tokenizer, ids + [2] + ids, seed)  # a special token inside is skipped


def test_bundled_tokenizer_text_is_exact(smollm_tokenizer):
    tok = smollm_tokenizer
    for seed, text in enumerate(TEXTS):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        check_groups(tok, ids, seed)
        check_groups(tok, [tok.eos_token_id] + ids + ids[:-3], seed + 10)
    rng = random.Random(0)
    for seed in range(20):  # random ids: byte tokens that never complete a character, specials, anything
        ids = [rng.randrange(len(tok)) for _ in range(40)]
        check_groups(tok, ids, seed)


def test_only_a_window_is_decoded(smollm_tokenizer):
    """Each update decodes the window (committed context + new tokens), not the whole text."""
    tok = smollm_tokenizer
    decoded = []

    class Counting:
        def decode(self, ids, **kw):
            decoded.append(len(ids))
            return tok.decode(ids, **kw)

    ids = tok(TEXTS[1] * 8, add_special_tokens=False)["input_ids"]
    detok = Detokenizer(Counting())
    for n in range(3, len(ids) + 1, 3):
        assert detok.update(ids[:n]) == tok.decode(ids[:n])
    assert max(decoded) <= CONTEXT + 3 + 8  # (a character split over up to a few byte tokens waits)
