"""Training with a single tail (`single_tail`): the layout is checked, trained, saved and decoded as trained."""

import pytest

from hamburger.core.checkpoint import load_checkpoint
from hamburger.errors import HamburgerError
from hamburger.train.trainer import Trainer
from tests.helpers import train_config as config


def test_a_run_saves_its_layout_and_a_checkpoint_of_another_layout_can_start_one(env, tmp_path):
    plain = Trainer(config(env, tmp_path / "plain", base_mode="lora", lora_scope="merged", max_train_steps=1,
                           save_every=1))
    plain.train()
    tail = Trainer(config(env, tmp_path / "tail", init=str(tmp_path / "plain" / "last"), base_mode="lora",
                          lora_scope="merged", single_tail=1, max_train_steps=2, save_every=1))
    assert tail.model.config.single_tail == 1
    # every row's length for batching counts the tail's extra slots
    assert tail.lengths(0) == [r.slots(1) for r in tail.rows] != [r.slots(0) for r in tail.rows]
    tail.train()
    model, _, _ = load_checkpoint(tmp_path / "tail" / "last")
    assert model.config.single_tail == 1


@pytest.mark.parametrize("bad", [-1, 4])
def test_single_tail_is_checked(env, tmp_path, bad):
    with pytest.raises(HamburgerError, match="single_tail"):
        config(env, tmp_path, single_tail=bad)


def test_a_folding_run_batches_by_its_own_slots_and_saves_the_layout(env, tmp_path):
    run = Trainer(config(env, tmp_path / "fold", base_mode="lora", lora_scope="merged", single_tail=1, fold_tail=1,
                         max_train_steps=2, save_every=1))
    assert run.model.config.fold_tail == 1
    assert run.lengths(0) == [r.slots(1, 1) for r in run.rows] != [r.slots(1) for r in run.rows]
    run.train()
    model, _, _ = load_checkpoint(tmp_path / "fold" / "last")
    assert model.config.single_tail == 1 and model.config.fold_tail == 1


@pytest.mark.parametrize("bad", [{"single_tail": 0}, {"single_tail": 1, "msd_context": 2},
                                 {"single_tail": 1, "hidden_weight": 1.0, "kl_weight": 0.5},
                                 {"single_tail": 1, "fold_tail": -1}])
def test_fold_tail_is_checked(env, tmp_path, bad):
    with pytest.raises(HamburgerError, match="fold_tail"):
        config(env, tmp_path, **{"fold_tail": 1, **bad})


def test_a_verify_window_run_trains_the_reading_and_keeps_the_stop_head(env, tmp_path):
    """`verify_window`: verify-fold's layout (every token its own slot, groups folded W tokens after their end); the
    rows batch by that layout's slots, the base's every prediction is trained and the stop head gets no target."""
    import torch

    from hamburger.core.packing import layout_slots

    run = Trainer(config(env, tmp_path / "window", base_mode="lora", lora_scope="merged", verify_window=2,
                         stop_loss_weight=0.0, max_train_steps=2, save_every=1))
    assert run.lengths(0) == [layout_slots(len(r.prompt_ids), r.groups, window=2) for r in run.rows]
    assert run.lengths(0) != [r.slots() for r in run.rows]
    stop = {k: v.clone() for k, v in run.model.stop_head.state_dict().items()}
    run.train()
    for k, v in load_checkpoint(tmp_path / "window" / "last")[0].stop_head.state_dict().items():
        torch.testing.assert_close(v.float(), stop[k].float(), rtol=1e-3, atol=1e-5)  # (weight decay only)


@pytest.mark.parametrize("bad", [{"stop_loss_weight": 0.5}, {"single_tail": 1}, {"msd_context": 2},
                                 {"stage": "msd"}, {"verify_window": -1}])
def test_verify_window_is_checked(env, tmp_path, bad):
    with pytest.raises(HamburgerError, match="verify_window"):
        config(env, tmp_path, **{"verify_window": 2, "stop_loss_weight": 0.0, **bad})


def _mixed(env, out, **kw):
    return Trainer(config(env, out, base_mode="lora", lora_scope="merged", **kw))


def test_a_mixed_run_trains_each_step_exactly_as_the_run_of_that_layout_would(env, tmp_path):
    """`verify_window_every` k: every k-th step in verify-fold's layout (no stop loss), the others in the ordinary one;
    a step of either kind is the same optimizer step the single-layout run makes on the same rows."""
    import torch

    from hamburger.core.packing import layout_slots

    mixed = _mixed(env, tmp_path / "mixed", verify_window=2, verify_window_every=2, stop_loss_weight=0.5)
    assert [mixed.layout_at(s) for s in range(4)] == [(0, 0, 0), (0, 0, 2), (0, 0, 0), (0, 0, 2)]
    assert mixed.lengths(0) == [max(r.slots(), layout_slots(len(r.prompt_ids), r.groups, window=2))
                                for r in mixed.rows]
    rows = mixed.plan.steps[0][2]
    for step, single in [(0, _mixed(env, tmp_path / "plain", stop_loss_weight=0.5)),
                         (1, _mixed(env, tmp_path / "window", verify_window=2, stop_loss_weight=0.0))]:
        mixed_run = _mixed(env, tmp_path / f"mixed{step}", verify_window=2, verify_window_every=2,
                           stop_loss_weight=0.5)
        mixed_run.step = single.step = step
        assert torch.equal(mixed_run.train_step(rows), single.train_step(rows))
        for (name, a), (_, b) in zip(mixed_run.model.named_parameters(), single.model.named_parameters()):
            assert torch.equal(a, b), name
        assert mixed_run.model.config.stop_loss_weight == 0.5


def test_a_mixed_run_evaluates_both_layouts_and_saves_the_stop_weight(env, tmp_path):
    run = _mixed(env, tmp_path / "mixed", verify_window=2, verify_window_every=2, stop_loss_weight=0.5,
                 eval_data=env["data"], max_train_steps=2, save_every=1)
    metrics = run.evaluate()
    assert metrics["window"]["token_acc_micro"][1:] == [None] * 3 and metrics["token_acc_micro"][1] is not None
    run.train()
    assert load_checkpoint(tmp_path / "mixed" / "last")[0].config.stop_loss_weight == 0.5


@pytest.mark.parametrize("bad", [{"verify_window": 0}, {"verify_window_every": -1},
                                 {"verify_window_every": 1, "stop_loss_weight": 0.5}])
def test_verify_window_every_is_checked(env, tmp_path, bad):
    with pytest.raises(HamburgerError, match="verify_window"):
        config(env, tmp_path, **{"verify_window": 2, "verify_window_every": 2, "stop_loss_weight": 0.0, **bad})
