"""IFEval checkers on hand-made answers: one that follows and one that breaks each of several
instruction types, the loose variant, the sentence tokenizer, and the shipped prompts."""

import pytest

from hamburger.errors import HamburgerError
from hamburger.eval.ifeval import aggregate, install_punkt_tab, load_ifeval, require_punkt, score_ifeval


def row(instruction: str, **kwargs) -> dict:
    return {"key": 1, "prompt": "Write about cats.", "instruction_id_list": [instruction], "kwargs": [kwargs]}


@pytest.mark.parametrize("instruction, kwargs, good, bad", [
    ("punctuation:no_comma", {}, "Cats sleep a lot and purr.", "Cats sleep, eat, and purr."),
    ("change_case:english_lowercase", {}, "cats are small furry animals.", "Cats are small furry animals."),
    ("keywords:existence", {"keywords": ["whisker", "tail"]}, "A cat has a tail and a whisker.", "A cat purrs."),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* soft fur\n* sharp claws", "* soft fur"),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Cats nap.\n\nP.S. I love them.", "Cats nap."),
    ("startend:quotation", {}, '"Cats are great."', "Cats are great."),
    # the sentence counter needs NLTK's punkt_tab: "Mr." must not end a sentence, "Dr." neither
    ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "less than"},
     "Mr. Whiskers met Dr. Paws at noon.", "Cats nap. Cats eat. Cats purr."),
])
def test_follows_and_breaks(instruction, kwargs, good, bad):
    assert score_ifeval(row(instruction, **kwargs), good)["prompt_strict"] == 1.0
    result = score_ifeval(row(instruction, **kwargs), bad)
    assert result["prompt_strict"] == 0.0 and result["prompt_loose"] == 0.0
    assert result["followed"] == [{"id": instruction, "strict": False, "loose": False}]


def test_sentence_tokenizer_is_punkt():
    from if_verifiable.ifeval.instructions_util import count_sentences

    require_punkt()
    assert count_sentences("Mr. Smith went to Washington. He arrived at 5 p.m. on Monday.") == 2


def test_loose_drops_a_first_line_and_prompt_level_needs_all():
    lowercase = row("change_case:english_lowercase")
    result = score_ifeval(lowercase, "Sure! Here it is:\ncats are small furry animals.")
    assert (result["inst_strict"], result["inst_loose"]) == (0.0, 1.0)
    two = {"key": 2, "prompt": "p", "instruction_id_list": ["punctuation:no_comma", "change_case:english_lowercase"],
           "kwargs": [{}, {}]}
    half = score_ifeval(two, "Cats nap and purr.")
    assert (half["prompt_strict"], half["inst_strict"], half["instructions"]) == (0.0, 0.5, 2)
    empty = score_ifeval(two, "   ")
    assert empty["inst_loose"] == 0.0 and [f["strict"] for f in empty["followed"]] == [False, False]
    # instruction level is the micro average over instructions; prompt level the mean over prompts
    agg = aggregate([half, score_ifeval(lowercase, "cats are small furry animals.")])
    assert agg["inst_strict"] == pytest.approx(2 / 3) and agg["prompt_strict"] == 0.5


def test_shipped_prompts():
    rows = load_ifeval()
    assert len(rows) == 541 and sum(len(r["instruction_id_list"]) for r in rows) == 834
    assert rows[0]["key"] == 1000 and len(load_ifeval(limit=3)) == 3


def test_missing_punkt_is_a_clear_error(monkeypatch, tmp_path):
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    with pytest.raises(HamburgerError, match="punkt_tab"):
        score_ifeval(row("punctuation:no_comma"), "no commas here")


def test_install_punkt_tab_extracts_only_english(tmp_path):
    import zipfile

    wheel = tmp_path / "w.whl"
    inner = "llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/"
    with zipfile.ZipFile(wheel, "w") as z:
        for name in ("english/abbrev_types.txt", "german/abbrev_types.txt", "README"):
            z.writestr(inner + name, name)
        z.writestr("llama_index/core/other.py", "")
    dest = install_punkt_tab(wheel, tmp_path / "nltk_data")
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert files == ["tokenizers/punkt_tab/README", "tokenizers/punkt_tab/english/abbrev_types.txt"]


def test_a_checker_that_draws_its_kwargs_gives_one_verdict_and_leaves_random_alone():
    """IFEval key 1122 asks for the "letter" "#", which keywords:letter_frequency cannot use: it draws a letter from
    `random` instead. Half the letters appear 4 times in this answer, so an unseeded draw flips the verdict."""
    import random

    hashtags = {"key": 1122, "prompt": "p", "instruction_id_list": ["keywords:letter_frequency"],
                "kwargs": [{"let_relation": "at least", "letter": "#", "let_frequency": 4}]}
    answer = " ".join(c * 4 for c in "abcdefghijklm")
    verdicts = set()
    for seed in range(20):
        random.seed(seed)
        verdicts.add(score_ifeval(hashtags, answer)["inst_strict"])
        assert random.random() == random.Random(seed).random(), "the caller's random state moved"
    assert len(verdicts) == 1
