"""Global fixtures: a character-level tokenizer and a tiny random model (plain helpers: tests/helpers.py)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

from tests.helpers import make_char_tokenizer, tiny_hamburger  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: integration test on the real bundled model")


@pytest.fixture(scope="session")
def char_tokenizer():
    """A real fast tokenizer with one token per character (vocab 100), ids: pad 0, bos 1, eos 2 and 3."""
    return make_char_tokenizer()


@pytest.fixture
def tiny_model():
    return tiny_hamburger("llama")
