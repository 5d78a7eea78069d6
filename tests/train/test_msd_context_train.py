"""Training the MSD with context (`msd_context`), and stage msd from a checkpoint whose base carries scoped adapters."""

import pytest
import torch

from hamburger.core.checkpoint import load_checkpoint
from hamburger.core.lora import lora_state_dict
from hamburger.errors import HamburgerError
from hamburger.train.trainer import Trainer
from tests.helpers import perturb_lora, train_config as config


def test_stage_msd_from_an_adapted_checkpoint_keeps_its_adapters_and_saves_the_context(env, tmp_path):
    adapted = Trainer(config(env, tmp_path / "lora", base_mode="lora", lora_scope="merged", max_train_steps=1,
                             save_every=1))
    perturb_lora(adapted)
    adapted.train()
    adapters = lora_state_dict(load_checkpoint(tmp_path / "lora" / "last")[0].base)
    msd = Trainer(config(env, tmp_path / "msd", init=str(tmp_path / "lora" / "last"), stage="msd", base_mode="frozen",
                         lora_scope="merged", msd_chains="all", stop_target="accepted", kl_weight=1.0, msd_context=2,
                         max_train_steps=2, save_every=1))
    assert msd.model.config.msd_context == 2 and msd.model.config.lora_scope == "merged"
    before = {n: p.detach().clone() for n, p in msd.model.decoder.named_parameters()}
    msd.train()
    model, _, _ = load_checkpoint(tmp_path / "msd" / "last")
    assert model.config.msd_context == 2
    assert any(not torch.equal(p, before[n]) for n, p in model.decoder.named_parameters())  # the MSD trained
    saved = lora_state_dict(model.base)
    assert saved.keys() == adapters.keys() and all(torch.equal(saved[k], adapters[k]) for k in adapters)


def test_msd_context_is_checked(env, tmp_path):
    with pytest.raises(HamburgerError, match="msd_context"):
        Trainer(config(env, tmp_path, msd_context=-1))
