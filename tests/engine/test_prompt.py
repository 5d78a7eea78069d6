"""The one home of eos ids and stop strings (engine/prompt)."""

from types import SimpleNamespace

import pytest

from hamburger.engine.prompt import cut_at_stop, eos_ids, safe_prefix
from hamburger.errors import HamburgerError


def test_eos_ids_one_ordered_list():
    lm = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[7, 3]), config=SimpleNamespace(eos_token_id=3))
    assert eos_ids(lm, SimpleNamespace(eos_token_id=9)) == [7, 3, 9]
    bare = SimpleNamespace(config=SimpleNamespace(eos_token_id=None))
    assert eos_ids(bare, SimpleNamespace(eos_token_id=None)) == []
    with pytest.raises(HamburgerError, match="no end-of-sequence"):
        eos_ids(bare, SimpleNamespace(eos_token_id=None), required=True)


def test_stop_strings():
    assert cut_at_stop("one. two. END three", ["END", "two"]) == ("one. ", "two")  # the earliest, not the first
    assert cut_at_stop("one. two. END three", ["END", "two"], keep=True) == ("one. two", "two")
    assert cut_at_stop("xabcd", ["abc", "ab"], keep=True) == ("xabc", "abc")  # at one place: the first listed
    assert cut_at_stop("END. END", ["END"], after=3) == ("END. ", "END")  # (one that ends past 3 characters)
    assert cut_at_stop("END. END", ["END"], after=2) == ("", "END")
    assert cut_at_stop("ab END", ["b E", "END"], after=3) == ("a", "b E")  # (the earliest of those)
    assert cut_at_stop("ab END", ["b E", "END"], after=4) == ("ab ", "END")
    assert cut_at_stop("nothing", ["END"]) == ("nothing", None)
    assert safe_prefix("abc EN", ["END"]) == 4 and safe_prefix("ab\ufffd", []) == 2
