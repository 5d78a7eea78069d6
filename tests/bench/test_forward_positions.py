"""benchmarks/forward_positions.py times a forward over k new positions on a cache: what it times must be that forward
(the base's own choices at those positions) and must leave the cache as it found it, so every timed call is alike."""

import pytest
import torch

from benchmarks.forward_positions import EngineForward, LlamaCppForward, TorchForward
from tests.helpers import tiny_base, tiny_hamburger


def test_torch_step_is_the_forward_over_new_positions_and_cuts_the_cache_back():
    base = tiny_base("llama", seed=0).eval()
    context, tokens = [5, 9, 13, 2, 7, 30], [11, 4, 17]
    step = TorchForward(base, context)
    with torch.inference_mode():
        whole = base(input_ids=torch.tensor([context + tokens])).logits[0, len(context):].argmax(-1).tolist()
    assert step.step(tokens) == whole
    assert step.cache.get_seq_length() == len(context)
    assert step.step(tokens) == whole and step.step(tokens[:1]) == whole[:1]


def test_engine_step_is_the_models_forward_over_new_positions_and_drops_them_again():
    """The HAMburger model's own forward (the lean pass) chooses what HF's forward of its base chooses."""
    model = tiny_hamburger("llama", seed=0).eval()
    context, tokens = [5, 9, 13, 2, 7, 30], [11, 4, 17]
    step = EngineForward(model, context)
    with torch.inference_mode():
        whole = model.base(input_ids=torch.tensor([context + tokens])).logits[0, len(context):].argmax(-1).tolist()
    assert step.step(tokens) == whole and step.cache.filled == len(context)
    assert step.step(tokens) == whole and step.step(tokens[:2]) == whole[:2]


@pytest.mark.slow
def test_llama_cpp_step_reads_every_position_or_the_last_and_cuts_back():
    pytest.importorskip("llama_cpp")
    from hamburger.core.base import load_base
    from hamburger.engine.prompt import encode_prompt

    _, tokenizer, _ = load_base(None)
    context = encode_prompt(tokenizer, "Name three colours.")
    tokens = tokenizer.encode(" Red, green and blue.")
    every, last = LlamaCppForward(1, context), LlamaCppForward(1, context, all_logits=False)
    chosen = every.step(tokens)
    assert len(chosen) == len(tokens) and every.llm.n_tokens == len(context)
    assert every.step(tokens) == chosen and last.step(tokens) == chosen[-1:]
    assert every.step(tokens[:2]) == chosen[:2]  # (the cache held the context only: the same choices)
