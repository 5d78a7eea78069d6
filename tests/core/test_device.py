"""The grafted modules are built where the base lives: a HAMburger made around a base already on a GPU (verify
mode's `on_base`, `load_reference`) must not leave its embedder, micro decoder or stop head on the CPU. The
meta device stands in for a GPU here: a module left behind would sit on the CPU."""
import pytest
import torch

from hamburger.core.config import HamburgerConfig
from hamburger.core.model import HamburgerModel
from tests.helpers import tiny_base


@pytest.mark.parametrize("decoder_init", ["copy_last", "random"])
def test_grafted_modules_follow_the_base_device_and_dtype(decoder_init):
    base = tiny_base().to("meta", torch.bfloat16)
    model = HamburgerModel(base, HamburgerConfig(max_steps=4, decoder_init=decoder_init))
    grafted = {name: p for name, p in model.named_parameters() if not name.startswith("base.")}
    assert {name.split(".")[0] for name in grafted} == {"embedder", "decoder", "stop_head"}
    assert {(p.device.type, p.dtype) for p in grafted.values()} == {("meta", torch.bfloat16)}
    assert {b.device.type for name, b in model.named_buffers() if not name.startswith("base.")} == {"meta"}
