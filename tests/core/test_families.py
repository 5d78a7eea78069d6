"""The engine's two equalities on tiny random bases of the families users convert, and what it refuses.

Each family is built by transformers itself (`tests.helpers.FAMILIES`): its own norms, attention and rotary code. At
confidence 1.0 the decode is the base's own greedy decode, and a decode with merges gives, token by token, the logits
of the teacher-forced training forward over its groups.
"""

import pytest
import torch

from hamburger.core.config import HamburgerConfig
from hamburger.core.lean import LeanStack
from hamburger.core.masks import as_read_by
from hamburger.core.model import HamburgerModel
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.generate import generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import (FAMILIES, PROMPTS, assert_engine_matches_training_forward, hf_greedy, tiny_base,
                           tiny_hamburger)

OTHER_FAMILIES = [f for f in FAMILIES if f not in ("llama", "qwen2")]  # (those two run in every engine test)


@pytest.mark.parametrize("family", OTHER_FAMILIES)
def test_confidence_one_equals_base_greedy(family, char_tokenizer):
    model = tiny_hamburger(family)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=24, confidence=1.0))
        assert res.token_ids == hf_greedy(model.base, prompt, 24)


@pytest.mark.parametrize("family", OTHER_FAMILIES)
def test_incremental_logits_equal_training_forward(family, char_tokenizer):
    assert_engine_matches_training_forward(tiny_hamburger(family, seed=3), char_tokenizer)


def test_eager_attention_reads_additive_masks():
    mask = torch.tensor([[[[True, False], [True, True]]]])
    additive = as_read_by(mask, "eager", torch.bfloat16)
    assert additive.dtype == torch.bfloat16
    assert additive.tolist() == [[[[0.0, torch.finfo(torch.bfloat16).min], [0.0, 0.0]]]]
    assert as_read_by(mask, "sdpa", torch.float32) is mask
    assert as_read_by(additive, "eager", torch.float32) is additive


@pytest.mark.parametrize("family", ["llama-eager", "smollm3"])
def test_lean_stack_serves_eager_attention_and_layers_without_rotation(family):
    """Both run the lean forward (its build-time check passes, at positions far apart) and match the engine's
    equalities above: eager attention given additive masks, SmolLM3's last layer left unrotated."""
    assert LeanStack.for_stack(base_decoder_stack(tiny_base(family))) is not None


def test_attention_that_reads_no_mask_is_refused():
    base = tiny_base("llama")
    base.config._attn_implementation = "flash_attention_2"
    with pytest.raises(HamburgerError, match="flash_attention_2"):
        HamburgerModel(base, HamburgerConfig(max_steps=4))


@pytest.mark.parametrize("family", ["llama", "llama-eager", "gemma2"])
def test_kl_teacher_is_the_base_own_forward(family):
    """The KL teacher (the unmerged base over [prompt, response], right-padded rows) gives at each response token the
    logits of the base's own forward over that row alone."""
    from hamburger.core.packing import TrainBatch

    model = tiny_hamburger(family)
    prompts, responses = [[1, 5, 6], [1, 7]], [[8, 9, 10, 11], [12, 13, 14]]
    teacher = model.teacher_states(TrainBatch(prompts, responses, [[1] * len(r) for r in responses]))
    with torch.no_grad():
        expected = [model.base(torch.tensor([p + r])).logits[0, len(p) - 1:-1] for p, r in zip(prompts, responses)]
    torch.testing.assert_close(teacher.logits(), torch.cat(expected).float(), rtol=1e-4, atol=1e-4)
