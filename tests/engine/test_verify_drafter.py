"""A verify drafter (`modules.Drafter`): a second micro-step decoder and stop head that draft in the verify modes in
place of the model's own. It changes the drafts, never the output; checkpoints carry it."""

from dataclasses import replace

import pytest
import torch

from hamburger.core.checkpoint import VERIFY_DRAFTER_FILE, export, load_checkpoint, save_checkpoint, \
    write_verify_drafter
from hamburger.core.modules import Drafter, StopHead
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy, save_tiny_checkpoint
from tests.verify_helpers import drafting_model

CFG = DecodingConfig(max_new_tokens=30, confidence=0.2)


def _run(model, tokenizer, prompt, **kw):
    r = VerifyGeneration(model, tokenizer, [prompt], CFG, **kw).run()[0]
    return r.token_ids, r.drafts, r.accepted


def _perturbed(drafter: Drafter, seed: int, scale: float = 0.1) -> Drafter:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in drafter.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)
    return drafter


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_a_verify_drafter_changes_the_drafts_not_the_output(family, char_tokenizer):
    """A drafter with other weights than the model's own MSD and stop head drafts other tokens (and lengths): every run
    still prints the base's greedy answer. A drafter that is a copy of the model's own pair drafts exactly as the model
    does, and `Drafter.of` asks the model's own pair where the model has a verify drafter."""
    model = drafting_model(family, init="random")
    other = _perturbed(Drafter.copy_of(model), seed=1)
    changed = 0
    for prompt in PROMPTS:
        answer = hf_greedy(model.base, prompt, 30)
        own = _run(model, char_tokenizer, prompt)
        assert own[0] == answer
        assert _run(model, char_tokenizer, prompt, drafter=Drafter.copy_of(model)) == own
        model.verify_drafter = other
        try:
            tokens, drafts, accepted = _run(model, char_tokenizer, prompt)
            assert _run(model, char_tokenizer, prompt, drafter=Drafter.of(model)) == own  # the own pair on request
        finally:
            model.verify_drafter = None
        assert tokens == answer and sum(drafts) > 0
        changed += (drafts, accepted) != own[1:]
    assert changed > 0


def test_a_checkpoint_carries_its_verify_drafter(tmp_path, char_tokenizer):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    model, _, info = load_checkpoint(ckpt)
    assert model.verify_drafter is None
    drafter = _perturbed(Drafter.copy_of(model), seed=0)
    write_verify_drafter(ckpt, drafter, torch.float32)
    loaded = load_checkpoint(ckpt)[0]
    want = drafter.state_dict()
    assert all(torch.equal(v, want[k]) for k, v in loaded.verify_drafter.state_dict().items())
    assert not torch.equal(loaded.verify_drafter.decoder.layers[0].mlp.up_proj.weight,
                           loaded.decoder.layers[0].mlp.up_proj.weight)  # its own parameters, not the model's
    assert on_base(loaded, load_checkpoint(ckpt)[0]).verify_drafter is loaded.verify_drafter
    copy = save_checkpoint(loaded, tmp_path / "copy", info)  # a re-save keeps it
    assert all(torch.equal(v, want[k]) for k, v in load_checkpoint(copy)[0].verify_drafter.state_dict().items())
    small = export(ckpt, tmp_path / "small")  # bf16
    assert all(torch.equal(v, want[k].to(torch.bfloat16).float())
               for k, v in load_checkpoint(small)[0].verify_drafter.state_dict().items())
    write_verify_drafter(ckpt, Drafter(drafter.decoder, StopHead(replace(model.config, stop_hidden=8))))
    with pytest.raises(HamburgerError, match="does not fit"):
        load_checkpoint(ckpt)
    (ckpt / VERIFY_DRAFTER_FILE).write_bytes(b"not safetensors")
    with pytest.raises(HamburgerError, match="cannot read the verify drafter"):
        load_checkpoint(ckpt)
