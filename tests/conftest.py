"""Global fixtures: a character-level tokenizer and a tiny random model (plain helpers: tests/helpers.py)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

import torch  # noqa: E402

from tests.helpers import make_char_tokenizer, tiny_base, tiny_hamburger, write_dataset  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: integration test on the real bundled model")


@pytest.fixture(scope="session")
def char_tokenizer():
    """A real fast tokenizer with one token per character (vocab 100), ids: pad 0, bos 1, eos 2 and 3."""
    return make_char_tokenizer()


@pytest.fixture
def tiny_model():
    return tiny_hamburger("llama")


@pytest.fixture(scope="module")
def env(tmp_path_factory, char_tokenizer):
    """A tiny base (sharpened embeddings) and a dataset on disk, for short training runs (`tests.helpers.train_config`;
    some modules define their own)."""
    root = tmp_path_factory.mktemp("fast")
    base = root / "base"
    model = tiny_base("llama", seed=0)
    with torch.no_grad():  # sharper distributions: a KL clearly > 0, argmaxes far from ties
        model.get_input_embeddings().weight.mul_(4.0)
    model.save_pretrained(base)
    char_tokenizer.save_pretrained(base)
    return {"base": str(base), "data": str(write_dataset(root / "data.jsonl", char_tokenizer))}
