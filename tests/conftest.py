"""Shared fixtures: tiny random models of two HF families and a character-level tokenizer."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: integration test on the real bundled model")


CHARS = [chr(c) for c in range(32, 127)] + ["\n"]
SPECIALS = ["<pad>", "<s>", "</s>", "<eos2>"]


@pytest.fixture(scope="session")
def char_tokenizer():
    """A real fast tokenizer with one token per character (vocab 100), ids: pad 0, bos 1, eos 2 and 3."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    fast.add_special_tokens({"additional_special_tokens": ["<eos2>"]})
    return fast


def tiny_base(family: str = "llama", seed: int = 0, vocab: int = 100):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=128, max_position_embeddings=1024,
                  bos_token_id=1, eos_token_id=[2, 3], pad_token_id=0, tie_word_embeddings=True)
    if family == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common))
    elif family == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common))
    else:
        raise ValueError(family)
    model.generation_config.eos_token_id = [2, 3]
    model.generation_config.pad_token_id = 0
    return model.eval()


def tiny_hamburger(family: str = "llama", seed: int = 0, max_steps: int = 4, randomize: bool = True, **cfg):
    """A HAMburger on a tiny random base; `randomize` gives the grafted modules non-trivial weights."""
    from hamburger.core.config import HamburgerConfig
    from hamburger.core.model import HamburgerModel

    base = tiny_base(family, seed)
    model = HamburgerModel(base, HamburgerConfig(max_steps=max_steps, **cfg)).eval()
    if randomize:
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for p in list(model.embedder.parameters()) + list(model.stop_head.parameters()):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model


@pytest.fixture
def tiny_model():
    return tiny_hamburger("llama")
