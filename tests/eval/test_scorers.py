"""Scorers on hand-made examples, including a looping HumanEval completion (escapes: test_sandbox.py)."""

import pytest

from hamburger.eval.scorers import (chrf, extract_final_number, gsm8k_reference, humaneval_program, normalise_number,
                               rouge_l, run_sandboxed)
from tests.helpers import PROBLEM


@pytest.mark.parametrize("text, expected", [
    ("So she has 5 + 3 = 8 apples.\n#### 8", "8"),
    ("The answer is $1,234.50.", "1234.5"),
    ("He pays 12 dollars, so the answer is 18.", "18"),
    ("Total: -7 degrees", "-7"),
    ("It costs 3.0 dollars in the end", "3"),
    ("First 10, then 20, finally 30.", "30"),
    ("Answer: 0.5", "0.5"),
    ("no numbers here", None),
])
def test_extract_final_number(text, expected):
    assert extract_final_number(text) == expected


def test_gsm8k_reference_and_normalise():
    assert gsm8k_reference("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 72") == "72"
    assert gsm8k_reference("no marker") is None
    assert normalise_number("1,000") == "1000" and normalise_number("abc") is None


def test_rouge_and_chrf():
    assert rouge_l("the cat sat", "the cat sat") == 1.0
    assert rouge_l("a b c d", "a c") == pytest.approx(2 * (2 / 4) * 1.0 / (2 / 4 + 1.0))
    assert rouge_l("x", "y") == 0.0
    assert chrf("hello world", "hello world") == pytest.approx(1.0)
    assert 0.0 < chrf("hello world", "hello there") < 1.0
    assert chrf("abc", "xyz") == 0.0


def test_humaneval_correct_body_and_fenced_function_pass():
    assert run_sandboxed(humaneval_program(PROBLEM, "    return a + b\n"))[0]
    fenced = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\n"
    assert run_sandboxed(humaneval_program(PROBLEM, fenced))[0]


def test_humaneval_wrong_answer_fails():
    ok, reason = run_sandboxed(humaneval_program(PROBLEM, "    return a - b\n"))
    assert not ok and "AssertionError" in reason


def test_infinite_loop_is_killed_by_the_timeout():
    ok, reason = run_sandboxed(humaneval_program(PROBLEM, "    while True:\n        pass\n"), timeout=2)
    assert not ok and reason == "timeout"
