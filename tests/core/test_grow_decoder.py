"""Growing the micro-step decoder (`MicroStepDecoder.grow`, TrainConfig `grow_decoder`): new layers start as the
identity, so a grown model computes exactly what it computed before; its caches see every layer once."""

import pytest
import torch
from torch import nn

from hamburger.core.checkpoint import load_checkpoint
from hamburger.core.modules import MicroStepDecoder
from hamburger.core.packing import TrainBatch
from hamburger.engine.generate import generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from hamburger.train.trainer import Trainer
from tests.helpers import PROMPTS, assert_engine_matches_training_forward, save_tiny_checkpoint, tiny_hamburger
from tests.helpers import train_config as config

ROWS = TrainBatch([[4, 17, 22, 9, 11], [6, 6]], [[5, 9, 12, 7, 30, 31, 8], [40, 41, 42, 43, 44]],
                 [[1, 3, 2, 1], [2, 2, 1]])


def outputs(model):
    with torch.no_grad():
        out = model.training_forward(ROWS)
    return out.token_logits, out.stop_logits


@pytest.mark.parametrize("layers", [3, 4, 5])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_a_grown_model_computes_exactly_the_same(family, layers):
    model = tiny_hamburger(family, seed=3)
    before = outputs(model)
    model.grow_decoder(layers)
    assert len(model.decoder.layers) == layers == model.config.decoder_layers == model.decoder.config.num_hidden_layers
    after = outputs(model)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


def test_new_layers_are_zeroed_copies_spread_over_the_stack():
    model = tiny_hamburger("llama", seed=3)
    old = [layer.state_dict() for layer in model.decoder.layers]
    model.grow_decoder(5)  # 2 -> 5: one new layer after the first, two after the second
    sources = [0, 0, 1, 1, 1]
    for i, (layer, source) in enumerate(zip(model.decoder.layers, sources)):
        assert layer.self_attn.layer_idx == i
        is_new = i not in (0, 2)
        for name, value in layer.state_dict().items():
            zeroed = is_new and name.rsplit(".", 2)[-2] in ("o_proj", "down_proj")
            assert torch.equal(value, torch.zeros_like(value) if zeroed else old[source][name]), (i, name)


def test_grown_then_trained_layers_decode_as_the_training_forward(char_tokenizer):
    """Perturbed new layers (so they matter): the engine's per-layer caches still give the training forward's logits;
    caches keyed by stale layer indices would mix two layers' keys."""
    model = tiny_hamburger("llama", seed=3)
    model.grow_decoder(4)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in model.decoder.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    assert_engine_matches_training_forward(model, char_tokenizer)


def test_a_grown_checkpoint_round_trips(tmp_path, char_tokenizer):
    model = tiny_hamburger("llama", seed=5)
    model.grow_decoder(3)
    with torch.no_grad():
        model.decoder.layers[1].mlp.down_proj.weight.normal_(std=0.05)
    path = save_tiny_checkpoint(tmp_path, char_tokenizer, model)
    loaded, _, _ = load_checkpoint(path)
    assert loaded.config.decoder_layers == 3
    assert all(torch.equal(a, b) for a, b in zip(outputs(model), outputs(loaded)))
    settings = DecodingConfig(max_new_tokens=12, confidence=0.5)
    for prompt in PROMPTS:
        mine = generate(model, char_tokenizer, prompt, settings)
        theirs = generate(loaded, char_tokenizer, prompt, settings)
        assert (mine.token_ids, mine.groups) == (theirs.token_ids, theirs.groups)


def test_growing_refuses_to_shrink_and_unknown_layers():
    model = tiny_hamburger("llama", seed=3)
    with pytest.raises(HamburgerError, match="from 2 to 1"):
        model.grow_decoder(1)
    model.grow_decoder(2)  # the same depth: nothing changes
    assert len(model.decoder.layers) == 2
    odd = MicroStepDecoder.__new__(MicroStepDecoder)
    nn.Module.__init__(odd)
    odd.layers = nn.ModuleList([nn.Sequential(nn.Linear(4, 4))])
    with pytest.raises(HamburgerError, match="cannot grow"):
        odd.grow(2)


def test_training_grows_an_init_once_and_resumes_it(env, tmp_path):
    Trainer(config(env, tmp_path / "start", decoder_layers=2, max_train_steps=1, save_every=1)).train()
    init = str(tmp_path / "start" / "last")
    grown = Trainer(config(env, tmp_path / "grown", init=init, grow_decoder=3, max_train_steps=2, save_every=1))
    assert len(grown.model.decoder.layers) == 3
    new = grown.model.decoder.layers[2].self_attn.o_proj.weight  # 2 -> 3: after the last
    assert not new.any() and new.requires_grad
    grown.train()
    model, _, _ = load_checkpoint(tmp_path / "grown" / "last")
    assert model.config.decoder_layers == 3 and model.decoder.layers[2].self_attn.o_proj.weight.any()  # it trained
    resumed = Trainer(config(env, tmp_path / "grown", init=init, grow_decoder=3, max_train_steps=3, save_every=1),
                      resume=True)
    assert len(resumed.model.decoder.layers) == 3 and resumed.step == 2
    resumed.train()


def test_grow_decoder_needs_an_init(env, tmp_path):
    with pytest.raises(HamburgerError, match="grow_decoder"):
        config(env, tmp_path, grow_decoder=4)
    with pytest.raises(HamburgerError, match="grow_decoder"):
        config(env, tmp_path, grow_decoder=-1)
