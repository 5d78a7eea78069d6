"""`micro_lookup`: a greedy micro step takes the answer's own continuation where the MSD gives it enough probability."""

import pytest
import torch

from hamburger.core.config import HamburgerConfig
from hamburger.engine.generate import Generation, _Row
from hamburger.engine.micro import HostMicroLoop
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, tiny_hamburger


def one_group(model, history: list[int], temperature: float = 0.0, seed: int = 0, confidence: float = 0.5
              ) -> list[int]:
    """The group the host micro loop emits after an answer ``history`` (random base state, the model's gate, the
    knob ``confidence``)."""
    g = torch.Generator().manual_seed(seed)
    d = model.config.hidden_size
    hidden, features = torch.randn(1, d, generator=g), torch.randn(1, model.config.num_features, d, generator=g)
    cfg = DecodingConfig(max_new_tokens=50, confidence=confidence, temperature=temperature, seed=1)
    row = _Row([1, 2], cfg, 0.9, None, model.config.gate, model.config.prefilter)
    row.tokens = list(history)
    with torch.no_grad():
        HostMicroLoop(model, eos=[])(hidden, features, [row])
    return row.group


def skip_token(model, seed: int = 0) -> int:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        return int(model.decode_logits(torch.randn(1, model.config.hidden_size, generator=g)).argmax())


def test_a_group_copies_the_answers_continuation_where_the_msd_allows_it():
    model = tiny_hamburger("llama", seed=3, gate="token_prob")
    t1 = skip_token(model)
    without = one_group(model, [])
    assert without[0] == t1 and len(without) < model.config.max_steps  # (at knob 0.5 the MSD alone stops early)
    x, y, z = [v for v in range(5, 40) if v not in without][:3]
    history = [3, 4, t1, x, y, z, 9, 3, 4]  # the skip token t1 makes "3 4 t1" again: x, y, z follow it
    model.config.micro_lookup = 1e-12  # any probability the MSD gives passes
    assert one_group(model, history) == [t1, x, y, z]
    model.config.micro_lookup = 1.0  # nothing but a certain token passes: the MSD's own group
    assert one_group(model, history) == without
    model.config.micro_lookup = 0.0
    assert one_group(model, history) == without
    model.config.micro_lookup = 1e-12
    assert one_group(model, [3, 4, 11, x, y, z, 9, 3, 4]) == without  # no earlier "3 4 t1": nothing to copy
    assert x not in one_group(model, history, temperature=0.8)[1:2]  # sampled rows never copy


def test_the_msd_probability_decides_which_proposals_are_taken():
    model = tiny_hamburger("llama", seed=3, gate="token_prob")
    t1 = skip_token(model)
    history = [3, 4, t1, 7, 9, 3, 4]
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(1, model.config.hidden_size, generator=g)
    features = torch.randn(1, model.config.num_features, model.config.hidden_size, generator=g)
    with torch.no_grad():
        state = model.micro_hidden(features, torch.tensor([[t1]]))[0, -1]
        q = float(model.decode_logits(state[None]).float().softmax(-1)[0, 7])  # the MSD's probability of the proposal
    model.config.micro_lookup = q * 0.999
    assert one_group(model, history)[:2] == [t1, 7]
    model.config.micro_lookup = q * 1.001
    assert one_group(model, history)[1:2] != [7]


def test_with_continues_a_copy_goes_on_past_the_stop_head_and_nothing_else_does():
    model = tiny_hamburger("llama", seed=3, gate="token_prob", prefilter=1.0)  # the stop head ends every group
    t1 = skip_token(model)
    history = [3, 4, t1, 7, 8, 9, 5, 3, 4]
    model.config.micro_lookup = 1e-12
    assert one_group(model, history) == [t1]  # the prefilter ends the group before any micro step
    model.config.micro_lookup_continues = True
    assert one_group(model, history) == [t1, 7, 8, 9]  # each copy goes on to the next
    assert one_group(model, [3, 4, t1, 7, 8, 2, 5, 3, 4, t1, 9, 6, 3, 4]) == [t1, 9, 6, 3]  # the latest occurrence
    assert one_group(model, [3, 4, 11, 7, 8, 9, 5, 3, 4]) == [t1]  # nothing to copy: the stop head's end stands
    assert one_group(model, history, confidence=1.0) == [t1]  # knob 1.0 stays the base itself
    model.config.micro_lookup = 1.0  # the row goes on for a copy the MSD does not give: the group ends at once
    assert one_group(model, history) == [t1]


def test_micro_lookup_is_checked_and_needs_the_host_micro_loop():
    with pytest.raises(HamburgerError, match="micro_lookup"):
        HamburgerConfig(micro_lookup=1.5).validate()
    with pytest.raises(HamburgerError, match="micro_lookup_continues needs"):
        HamburgerConfig(micro_lookup_continues=True).validate()
    model = tiny_hamburger("llama", seed=3, gate="token_prob", micro_lookup=0.5)
    with pytest.raises(HamburgerError, match="micro_loop 'host'"):
        Generation(model, None, [PROMPTS[0]], DecodingConfig(max_new_tokens=4), micro_loop="device")
