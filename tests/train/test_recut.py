"""`recut`: every epoch re-cuts the rows' stored entropies with the next segmentation setting."""

import json
import os
import signal

import pytest
import torch

from hamburger.data.segment import SegmentSettings, segment_entropies
from hamburger.errors import HamburgerError
from hamburger.train.config import TrainConfig, build_config
from hamburger.train.trainer import Trainer
from tests.helpers import tiny_base, write_dataset

RECUT = [{"strategy": "sliding", "sliding_p": 0.5}, {"strategy": "sliding", "sliding_p": 0.95},
         {"strategy": "decreasing_v2", "ratio": 0.5, "abs_threshold": 1}]


@pytest.fixture(scope="module")
def env(tmp_path_factory, char_tokenizer):
    root = tmp_path_factory.mktemp("recut")
    tiny_base("llama", seed=0).save_pretrained(root / "base")
    char_tokenizer.save_pretrained(root / "base")
    return {"base": str(root / "base"), "data": str(write_dataset(root / "e.jsonl", char_tokenizer, entropies=True)),
            "plain": str(write_dataset(root / "plain.jsonl", char_tokenizer))}


def recut_config(env, out, **kw) -> TrainConfig:
    """24 rows in batches of 8: 3 steps an epoch, 12 steps = 4 epochs (the cuts 0, 1, 2, 0)."""
    settings = dict(base=env["base"], data=env["data"], out=str(out), base_mode="frozen", batch_size=8,
                    epochs=100.0, max_train_steps=12, lr_grafted=3e-3, warmup_steps=2, threads=1, progress=False,
                    save_every=3, decoder_layers=1, recut=RECUT)
    return TrainConfig.from_dict({**settings, **kw})


def groups_by_step(trainer: Trainer) -> list[list[tuple]]:
    return [[(tuple(r.response_ids), tuple(r.groups)) for r in trainer.step_rows(s)]
            for s in range(len(trainer.plan.steps))]


def test_each_epoch_trains_on_its_own_cut_and_resume_sees_the_same(env, tmp_path):
    straight = Trainer(recut_config(env, tmp_path / "a"))
    rows = [json.loads(line) for line in open(env["data"])]
    entropies = {tuple(r["response_ids"]): r["entropies"] for r in rows}
    settings = [SegmentSettings("sliding", 4, sliding_p=0.5), SegmentSettings("sliding", 4, sliding_p=0.95),
                SegmentSettings("decreasing_v2", 4, ratio=0.5, abs_threshold=1.0)]
    seen: dict[int, dict] = {}
    for (epoch, _, _), rows in zip(straight.plan.steps, groups_by_step(straight)):
        for response, groups in rows:
            assert sum(groups) == len(response) and max(groups) <= 4
            assert list(groups) == segment_entropies(entropies[response], settings[epoch % 3], 100)
            seen.setdefault(epoch, {})[response] = groups
    assert sorted(seen) == [0, 1, 2, 3] and all(len(seen[e]) == 24 for e in seen)
    assert seen[0] != seen[1] != seen[2] != seen[0] and seen[3] == seen[0]
    assert straight.train() == 0

    def kill_at_5(trainer):  # mid-epoch (epoch 1, batch 2 of 3)
        if trainer.step == 5:
            os.kill(os.getpid(), signal.SIGTERM)

    first = Trainer(recut_config(env, tmp_path / "b"))
    assert first.train(on_step=kill_at_5) == 128 + signal.SIGTERM
    resumed = Trainer(recut_config(env, tmp_path / "b"), resume=True)
    assert resumed.step == 5 and groups_by_step(resumed) == groups_by_step(straight)  # from any step on
    assert resumed.train() == 0
    for name, p in straight.model.named_parameters():
        assert torch.allclose(p, dict(resumed.model.named_parameters())[name], atol=1e-6, rtol=0), name
    with pytest.raises(HamburgerError, match="differ"):
        Trainer(recut_config(env, tmp_path / "b", recut=RECUT[:2]), resume=True)


def test_batches_are_bucketed_by_each_epochs_lengths(env, tmp_path):
    trainer = Trainer(recut_config(env, tmp_path / "t", batch_size=0, max_tokens=60, max_train_steps=0,
                                   epochs=3.0))
    assert trainer.cut_lengths[0] != trainer.cut_lengths[1]
    for step, (epoch, _, rows) in enumerate(trainer.plan.steps):
        slots = [r.slots() for r in trainer.step_rows(step)]
        assert slots == [trainer.lengths(epoch)[i] for i in rows]
        assert len(rows) == 1 or len(rows) * max(slots) <= 60
    assert {e for e, _, _ in trainer.plan.steps} == {0, 1, 2}
    assert sorted(i for e, _, rows in trainer.plan.steps if e == 1 for i in rows) == list(range(24))


def test_recut_refuses_rows_without_entropies(env, tmp_path):
    with pytest.raises(HamburgerError) as info:
        Trainer(recut_config(env, tmp_path / "p", data=env["plain"]))
    message = str(info.value)
    assert "recut needs entropies" in message and env["plain"] in message and "\n" not in message
    Trainer(recut_config(env, tmp_path / "q", data=env["plain"], recut=[]))  # the stored groups need none


@pytest.mark.parametrize("value, problem", [
    ([{"strategy": "zigzag"}], "unknown strategy 'zigzag'"),
    ([{"sliding_p": 0.5}], "needs a strategy"),
    ([{"strategy": "sliding", "max_steps": 2}], "only the keys strategy, abs_threshold"),
    ([{"strategy": "sliding", "sliding_p": 1.5}], r"H\(p\) needs 0 < p < 1"),
    ([{"strategy": "decreasing", "ratio": "high"}], "ratio must be numbers >= 0"),
    ([{"strategy": "decreasing", "ratio": True}], "ratio must be numbers >= 0"),
    ([{"strategy": "decreasing", "ratio": -1}], "the thresholds must be numbers >= 0"),
    ("sliding", "recut must be list"),
])
def test_recut_config_validation(value, problem):
    with pytest.raises(HamburgerError, match=problem):
        TrainConfig.from_dict({"recut": value})


def test_recut_config_forms():
    cfg = build_config(None, ["recut=[{strategy: sliding, sliding_p: 0.6}, {strategy: small_group}]"])
    assert cfg.recut == [{"strategy": "sliding", "sliding_p": 0.6}, {"strategy": "small_group"}]
    assert cfg.recut_settings(3) == [SegmentSettings("sliding", 3, sliding_p=0.6), SegmentSettings("small_group", 3)]
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg and TrainConfig().recut == []
    with pytest.raises(HamburgerError, match="recut needs the data.s groups"):
        TrainConfig.from_dict({"recut": RECUT, "stage": "msd", "base_mode": "frozen", "msd_chains": "all",
                               "stop_target": "accepted"})


FOLD = "segments:3:0.3:first:steps=6:p=0.7"


def test_a_verify_fold_run_trains_the_engines_token_keeping_layout(env, tmp_path):
    """`verify_fold`: the rows (training and held-out) are cut by the fold's own settings, groups longer than the
    embedder's max_steps included; every token is its own slot (no merged inputs), the base trains against its KL
    teacher, and the fully trained base is saved with the run."""
    from hamburger.core.checkpoint import read_meta
    from hamburger.engine.folding import parse_folding

    run = Trainer(recut_config(env, tmp_path / "keep", recut=[], base_mode="full", kl_weight=0.5,
                               stop_loss_weight=0.0, verify_fold=FOLD, eval_data=env["data"], max_train_steps=2,
                               save_every=1))
    folding = parse_folding(FOLD)
    assert run.layouts == [(0, 0, 3, 0.3, "first")]
    entropies = {tuple(r["response_ids"]): r["entropies"] for r in map(json.loads, open(env["data"]))}

    def cut(rows):
        return [segment_entropies(entropies[tuple(r.response_ids)], folding.segments, 100) for r in rows]

    assert [r.at_epoch(0).groups for r in run.rows] == cut(run.rows)
    assert [r.groups for r in run.eval_rows] == cut(run.eval_rows)
    assert max(max(r.groups) for r in run.eval_rows) > run.model.config.max_steps, "the test needs long groups"
    assert run.lengths(0) == [len(r.prompt_ids) + len(r.response_ids) - 1 for r in run.rows]
    before = {n: p.detach().clone() for n, p in run.model.base.named_parameters()}
    run.train()
    assert any(not torch.equal(p, before[n]) for n, p in run.model.base.named_parameters())
    assert read_meta(tmp_path / "keep" / "last").get("base_weights")
    assert "eval" in open(tmp_path / "keep" / "metrics.jsonl").read()


def test_an_after_fold_run_trains_adapters_that_act_from_the_first_fold(env, tmp_path):
    """`verify_fold` with LoRA at ``lora_scope: after_fold``: the adapters train (the prompts' states computed once:
    no trained weight acts there) and the checkpoint keeps them apart, scoped, on the unchanged base."""
    from hamburger.core.checkpoint import load_checkpoint, read_meta
    from hamburger.core.lora import lora_modules

    run = Trainer(recut_config(env, tmp_path / "after", recut=[], base_mode="lora", lora_scope="after_fold",
                               kl_weight=1.0, token_loss_weight=0.0, stop_loss_weight=0.0, verify_fold=FOLD,
                               lr_base=1e-2, max_train_steps=2))
    assert not run.model.prompt_trains()
    run.train()
    assert all(m.lora_B.abs().max() > 0 for _, m in lora_modules(run.model.base))
    meta = read_meta(tmp_path / "after" / "last")
    assert meta["config"]["lora_scope"] == "after_fold" and not meta.get("base_weights")
    model = load_checkpoint(tmp_path / "after" / "last", merge_adapters=True)[0]
    assert model.config.lora_scope == "after_fold" and list(lora_modules(model.base))  # (kept apart)


@pytest.mark.parametrize("bad", ["segments:3:merged", "segments:3:first:kv=0.5", "segments:3:first:offtop",
                                 "forwards:3:first", "segments:0:first", "segments:x", {"verify_window": 2},
                                 {"recut": RECUT}, {"stop_loss_weight": 0.5},
                                 {"base_mode": "lora", "lora_scope": "merged"},
                                 {"base_mode": "lora", "lora_scope": "after_fold", "verify_fold": ""}])
def test_verify_fold_is_checked(env, tmp_path, bad):
    settings = dict(recut=[], base_mode="full", kl_weight=0.5, stop_loss_weight=0.0, verify_fold=FOLD)
    settings.update(bad if isinstance(bad, dict) else {"verify_fold": bad})
    with pytest.raises(HamburgerError, match="verify_fold"):
        recut_config(env, tmp_path, **settings)
