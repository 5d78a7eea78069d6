"""The hidden-state term (`hidden_weight`): which slots it compares, that they line up with the unmerged base's
tokens exactly, and its config errors. Its equality on the fast paths (chunked loss, prompts run once) is in
test_fast_path.py."""

import pytest
import torch

from hamburger.core.model import hidden_match_loss, reading_pairs
from hamburger.core.modules import base_decoder_stack
from hamburger.core.packing import TrainBatch, as_packed
from hamburger.errors import HamburgerError
from hamburger.train.config import TrainConfig
from hamburger.train.trainer import Trainer
from tests.helpers import train_config as config


def test_reading_pairs_are_single_slots_after_a_merge():
    # row 0: groups [1, 2, 1, 1, 3]: the slots before groups 3 and 4 are single tokens after the merged group 1
    # row 1: [2, 1]: its only slot after a merge is the merged one itself; row 2: [1, 1, 1]: no merge at all
    groups = [[1, 2, 1, 1, 3], [2, 1], [1, 1, 1]]
    assert reading_pairs(groups) == ([3, 4], [4, 5])
    assert reading_pairs([[3, 1, 1]]) == ([2], [4])
    assert reading_pairs([[4]]) == ([], [])
    # with a single tail every group after a merge is read off a single slot, the merged group's own last token
    tails = [[3, 1, 2, 1], [4, 2]]
    assert reading_pairs(tails) == ([2], [4])
    assert reading_pairs(tails, single_tail=1) == ([1, 2, 3, 5], [3, 4, 6, 11])
    assert reading_pairs(groups, single_tail=1) == ([], [])  # a 2-token group is fed as [1, 1]: nothing merged


def test_no_pair_gives_zero_with_a_gradient_path():
    states = torch.randn(3, 2, 8, requires_grad=True)
    loss = hidden_match_loss(states, torch.randn(5, 2, 8), [[1, 1, 1]])
    assert float(loss.detach()) == 0.0 and loss.requires_grad


def test_cosine_distance_per_pair_and_layer():
    student = torch.randn(5, 2, 8)
    teacher = torch.randn(9, 2, 8)
    teacher[4] = 3 * student[3]  # pair (3, 4): parallel at both layers
    teacher[5, 0], teacher[5, 1] = -student[4, 0], student[4, 1]  # pair (4, 5): opposite, then parallel
    loss = hidden_match_loss(student, teacher, [[1, 2, 1, 1, 3]])
    torch.testing.assert_close(loss, torch.tensor(2.0 / 4))


def states_at_groups(model, batch: TrainBatch):
    """The model's recorded layer states at the slot before every group, and the teacher's at every group's first
    token (both [G, L, d])."""
    packed = as_packed(batch, model.config.max_steps, model.device)
    teacher = model.teacher_states(packed)
    with torch.no_grad(), model._recording(True) as rec:
        model.training_forward(packed)
    first = torch.cumsum(packed.group_sizes, 0) - packed.group_sizes
    return rec["states"][packed.before_group], teacher.layers[first], teacher


@pytest.mark.parametrize("reuse_prompt", [False, True])
def test_states_line_up_with_the_unmerged_base_where_nothing_is_merged(env, tmp_path, reuse_prompt):
    """Without merges every slot is the unmerged sequence's token: the recorded states at the slot before each group
    equal the teacher's at that group's first token, at every layer; the last layer, normed, is the teacher's final
    state. With a merge, the single slots after it differ."""
    trainer = Trainer(config(env, tmp_path, base_mode="lora", lora_scope="merged", kl_weight=0.5, hidden_weight=1.0))
    model = trainer.model
    model.reuse_prompt = reuse_prompt
    assert model.hidden_layers == tuple(range(len(base_decoder_stack(model.base).layers)))
    single = TrainBatch([[1, 5, 6], [1, 7]], [[8, 9, 10, 11], [12, 13, 14]], [[1, 1, 1, 1], [1, 1, 1]])
    prompt = model.prompt_states(as_packed(single, 4, model.device)) if reuse_prompt else None
    packed = as_packed(single, 4, model.device)
    teacher = model.teacher_states(packed, prompt)
    with torch.no_grad(), model._recording(True) as rec:
        model.training_forward(packed, prompt=prompt)
    states = rec["states"]
    if prompt is not None:
        states = prompt.padded(states)
        before = prompt.joined(packed.before_group)
    else:
        before = packed.before_group
    first = torch.cumsum(packed.group_sizes, 0) - packed.group_sizes
    mine, base = states[before][1:], teacher.layers[first][1:]  # (group 0 reads the prompt's last token)
    mine = torch.cat([mine[:3], mine[4:]])  # (row 1's first group too)
    base = torch.cat([base[:3], base[4:]])
    torch.testing.assert_close(mine, base, rtol=1e-5, atol=1e-5)
    norm = base_decoder_stack(model.base).norm
    after_prompt = torch.tensor([1, 2, 3, 5, 6])  # (with the prompts run once, their own states are not recorded)
    torch.testing.assert_close(norm(teacher.layers[after_prompt, -1]), teacher.hidden[after_prompt], rtol=1e-5,
                               atol=1e-5)

    merged = TrainBatch([[1, 5, 6]], [[8, 9, 10, 11, 12]], [[2, 1, 1, 1]])
    mine, base, _ = states_at_groups(model, merged)
    assert reading_pairs(merged.groups) == ([2, 3], [3, 4])
    assert float((mine[2:] - base[2:]).abs().max()) > 1e-3  # merged history changes what comes after it
    assert float(hidden_match_loss(mine, base.new_zeros(5, *base.shape[1:]).index_copy(
        0, torch.tensor([3, 4]), base[2:]), merged.groups)) > 0


@pytest.mark.parametrize("bad, match", [
    (dict(hidden_weight=1.0), "needs kl_weight"),
    (dict(hidden_weight=1.0, kl_weight=0.5, stage="msd"), "needs kl_weight > 0 and stage full"),
    (dict(hidden_weight=-1.0, kl_weight=0.5), "hidden_weight must be >= 0"),
])
def test_config_errors(bad, match):
    with pytest.raises(HamburgerError, match=match):
        TrainConfig.from_dict({"data": "x.jsonl", **bad})


def test_layers_out_of_range_are_an_error(env, tmp_path):
    with pytest.raises(HamburgerError, match="hidden_layers must lie in"):
        Trainer(config(env, tmp_path, kl_weight=0.5, hidden_weight=1.0, hidden_layers=[99]))
