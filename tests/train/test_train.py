"""Training: overfitting in every base mode, exact resume, the KL term, config/data errors, LoRA, DDP."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hamburger.core.base import BaseInfo, weights_fingerprint
from hamburger.core.checkpoint import LORA_FILE, load_checkpoint, save_checkpoint
from hamburger.cli.main import main as cli_main
from hamburger.errors import HamburgerError
from hamburger.engine.generate import generate
from hamburger.core.lora import adapters_disabled, add_lora, lora_modules, merge_lora
from hamburger.engine.sampling import DecodingConfig
from hamburger.train.trainer import Trainer
from hamburger.train.config import TrainConfig, build_config
from hamburger.train.batching import epoch_batches, make_plan, shard
from hamburger.train.objective import chain_starts, lr_at
from tests.helpers import ROOT, tiny_base, tiny_hamburger, write_dataset


@pytest.fixture(scope="module")
def env(tmp_path_factory, char_tokenizer):
    root = tmp_path_factory.mktemp("train")
    base = root / "base"
    tiny_base("llama", seed=0).save_pretrained(base)
    char_tokenizer.save_pretrained(base)
    peaked = root / "peaked"  # larger logits: a base whose distributions are far from uniform (for the KL test)
    model = tiny_base("llama", seed=0)
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(10.0)
    model.save_pretrained(peaked)
    char_tokenizer.save_pretrained(peaked)
    return {"root": root, "base": str(base), "peaked": str(peaked),
            "data": str(write_dataset(root / "data.jsonl", char_tokenizer)),
            "single": str(write_dataset(root / "single.jsonl", char_tokenizer, singleton=True))}


def config(env, out, **kw) -> TrainConfig:
    settings = dict(base=env["base"], data=env["data"], out=str(out), batch_size=8, epochs=100.0, max_train_steps=12,
                    lr_grafted=3e-3, lr_base=1e-3, warmup_steps=2, threads=1, progress=False, log_every=4,
                    save_every=0, decoder_layers=1, lora_r=4)
    settings.update(kw)
    return TrainConfig.from_dict(settings)


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("mode,stage", [("frozen", "full"), ("lora", "full"), ("full", "full"), ("frozen", "msd")])
def test_overfit_every_base_mode(env, tmp_path, mode, stage):
    trainer = Trainer(config(env, tmp_path / mode, base_mode=mode, stage=stage, eval_data=env["data"],
                             max_train_steps=30))
    embedder = {k: v.clone() for k, v in trainer.model.embedder.state_dict().items()}
    before = trainer.evaluate()
    assert trainer.train() == 0
    if stage == "msd":  # the first stage leaves the embedder alone
        assert all(torch.equal(v, trainer.model.embedder.state_dict()[k]) for k, v in embedder.items())
    after = trainer.evaluate()
    assert after["loss"] < before["loss"] - 0.25, (before, after)
    assert after["token_acc"] > before["token_acc"] + 0.2, (before, after)
    assert after["stop_acc"] > before["stop_acc"]
    lines = [json.loads(x) for x in (tmp_path / mode / "metrics.jsonl").read_text().splitlines()]
    assert [x["kind"] for x in lines][:2] == ["start", "train"] and lines[-1]["kind"] == "end"
    evals = [x for x in lines if x["kind"] == "eval"]
    assert len(evals[-1]["token_acc_micro"]) == 4 and 0.0 <= evals[-1]["padding"] < 0.5
    if stage == "full":  # one prediction per response token: the fresh ones (no earlier 4-gram repeated) are known
        assert len(evals[-1]["token_acc_micro_fresh"]) == 4
    assert (tmp_path / mode / "last" / "trainer_state.pt").is_file()
    loaded, _, _ = load_checkpoint(tmp_path / mode / "last")  # `generate --model RUN/last` loads the same way
    for name, tensor in trainer.model.grafted_state_dict().items():
        assert torch.equal(tensor.cpu(), loaded.grafted_state_dict()[name])


def test_freeze_trains_only_the_other_grafted_modules(env, tmp_path):
    trainer = Trainer(config(env, tmp_path / "run", base_mode="frozen", freeze=["decoder", "stop_head"],
                             max_train_steps=4))
    start = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    assert trainer.train() == 0
    changed = {k.split(".")[0] for k, v in trainer.model.state_dict().items() if not torch.equal(v, start[k])}
    assert changed == {"embedder"}
    assert {p for g in trainer.optimizer.param_groups for p in g["params"]} == set(
        trainer.model.embedder.parameters())
    with pytest.raises(HamburgerError, match="freeze names grafted modules"):
        config(env, tmp_path / "x", freeze=["base"])
    with pytest.raises(HamburgerError, match="nothing would train"):
        config(env, tmp_path / "x", base_mode="frozen", stage="msd", freeze=["decoder", "stop_head"])


def test_eval_on_start_logs_the_start_point_on_the_same_rows(env, tmp_path):
    trainer = Trainer(config(env, tmp_path / "run", eval_data=env["data"], eval_on_start=True, max_train_steps=4))
    start = trainer.evaluate()
    assert trainer.train() == 0
    evals = [x for x in map(json.loads, (tmp_path / "run" / "metrics.jsonl").read_text().splitlines())
             if x["kind"] == "eval"]
    assert [x["step"] for x in evals] == [0, 4]
    assert evals[0]["token_acc_micro"] == start["token_acc_micro"]
    assert {k: evals[0][k] for k in ("loss", "token_acc", "stop_acc")} == pytest.approx(
        {k: start[k] for k in ("loss", "token_acc", "stop_acc")})
    assert evals[1]["loss"] != evals[0]["loss"]


def test_kill_and_resume_equals_uninterrupted(env, tmp_path):
    kw = dict(base_mode="lora", kl_weight=0.5, max_train_steps=10, save_every=3)
    straight = Trainer(config(env, tmp_path / "a", **kw))
    assert straight.train() == 0

    def kill_at_5(trainer):
        if trainer.step == 5:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler saves at the end of this step

    first = Trainer(config(env, tmp_path / "b", **kw))
    assert first.train(on_step=kill_at_5) == 128 + signal.SIGTERM
    assert first.step == 5
    with pytest.raises(HamburgerError, match="--resume"):
        Trainer(config(env, tmp_path / "b", **kw))  # an existing run is never overwritten silently
    with pytest.raises(HamburgerError, match="differ"):
        Trainer(config(env, tmp_path / "b", **{**kw, "lr_grafted": 1e-2}), resume=True)
    resumed = Trainer(config(env, tmp_path / "b", **kw), resume=True)
    assert resumed.step == 5
    assert resumed.train() == 0
    a, b = weights(straight), weights(resumed)
    assert a.keys() == b.keys() and any("lora_A" in n for n in a)
    for name in a:
        assert torch.allclose(a[name], b[name], atol=1e-6, rtol=0), name


def test_kl_is_zero_for_singleton_groups_and_training_reduces_it(env, tmp_path):
    trainer = Trainer(config(env, tmp_path / "s", base=env["peaked"], data=env["single"], base_mode="lora",
                             kl_weight=1.0))
    from hamburger.train.batching import to_batch
    batch = to_batch(trainer.rows[:6])
    with torch.no_grad():
        out = trainer.model(batch, trainer.teacher(batch))
    assert out.kl is not None and out.kl.item() < 1e-5  # one token per group = the unmerged base, exactly
    skip = out.micro_index == 0
    assert torch.allclose(out.token_logits[skip], trainer.teacher(batch).logits()[skip], atol=1e-4)

    def final_kl(weight):  # start from adapters pushed away from the base: a KL that is clearly > 0
        t = Trainer(config(env, tmp_path / f"kl{weight}", base=env["peaked"], base_mode="lora", kl_weight=1.0,
                           eval_data=env["data"], max_train_steps=20))
        with torch.no_grad():
            for _, m in lora_modules(t.model.base):
                m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=torch.Generator().manual_seed(0)) * 0.1)
        start = t.evaluate()["kl"]
        t.cfg.kl_weight = t.model.config.kl_weight = weight
        t.train()
        t.cfg.kl_weight = t.model.config.kl_weight = 1.0  # measure the KL in the final evaluation either way
        return start, t.evaluate()["kl"]

    start, with_kl = final_kl(5.0)
    _, without_kl = final_kl(0.0)
    assert start > 0.5  # (measured: 2.4 -> 1.2 with the KL term, 3.2 without)
    assert with_kl < 0.7 * start and with_kl < 0.6 * without_kl, (start, with_kl, without_kl)


def test_token_loss_weight_scales_the_cross_entropy_and_pure_kl_stays_nearer_the_base(env, tmp_path):
    """The loss is exactly token_loss_weight x CE + stop_loss_weight x stop BCE + kl_weight x KL; with weight 0 (pure
    KL) training on data the base would not write ends nearer the base than the same run with the data's CE."""
    trainer = Trainer(config(env, tmp_path / "w", base=env["peaked"], base_mode="lora", kl_weight=0.7,
                             token_loss_weight=0.3, stop_loss_weight=0.5))
    from hamburger.train.batching import to_batch
    batch = to_batch(trainer.rows[:6])
    with torch.no_grad():
        out = trainer.model(batch, trainer.teacher(batch))
    expected = 0.3 * out.token_loss + 0.5 * out.stop_loss + 0.7 * out.kl
    assert out.token_loss > 0 and out.kl > 0 and torch.allclose(out.loss, expected, rtol=1e-6, atol=0)

    def final_kl(token_weight):  # same start, data and schedule; only the weight of the data's cross-entropy differs
        t = Trainer(config(env, tmp_path / f"t{token_weight}", base=env["peaked"], base_mode="lora", kl_weight=1.0,
                           token_loss_weight=token_weight, eval_data=env["data"], max_train_steps=20))
        t.train()
        m = t.evaluate()
        assert m["loss"] == pytest.approx(token_weight * m["token_loss"] + 0.5 * m["stop_loss"] + m["kl"])
        return m["kl"]

    pure, with_ce = final_kl(0.0), final_kl(1.0)
    assert pure < 0.8 * with_ce, (pure, with_ce)  # (measured: 0.045 vs 1.03)


def test_kl_mix_weighs_forward_and_reverse_kl():
    """divergence / kl_to_teacher: mix 0 is KL(teacher || model), mix 1 KL(model || teacher), in between their mix,
    each exactly as summed by hand; the reverse term falls when the model moves mass off the tokens the teacher finds
    least likely, more than the forward term does."""
    from hamburger.core.model import kl_to_teacher
    g = torch.Generator().manual_seed(0)
    model, teacher = torch.randn(5, 11, generator=g), torch.randn(5, 11, generator=g) * 3
    q, p = model.log_softmax(-1), teacher.log_softmax(-1)
    forward, reverse = (p.exp() * (p - q)).sum(-1).mean(), (q.exp() * (q - p)).sum(-1).mean()
    torch.testing.assert_close(kl_to_teacher(model, teacher), forward)
    torch.testing.assert_close(kl_to_teacher(model, teacher, 1.0), reverse)
    torch.testing.assert_close(kl_to_teacher(model, teacher, 0.25), 0.75 * forward + 0.25 * reverse)
    assert abs(float(forward - reverse)) > 0.1  # (the two directions really differ here)
    unlikely = teacher < teacher.quantile(0.2, dim=-1, keepdim=True)
    off = model.masked_fill(unlikely, -30.0)  # the model drops the teacher's least likely tokens
    reverse_drop, forward_drop = reverse - kl_to_teacher(off, teacher, 1.0), forward - kl_to_teacher(off, teacher)
    assert reverse_drop > 0 and reverse_drop > 2 * forward_drop  # (measured: 0.71 and 0.19)


def test_msd_chains_start_at_every_response_token():
    from hamburger.core.packing import TrainBatch
    batch = TrainBatch([[1, 2, 3], [4, 5]], [[10, 11, 12, 13, 14], [20, 21]], [[2, 3], [1, 1]])
    rows, cols, tokens, sizes = chain_starts(batch, 3, "groups")
    assert (rows, cols, sizes) == ([0, 0, 1, 1], [2, 4, 1, 2], [2, 3, 1, 1])
    assert tokens == [[10, 11, 0], [12, 13, 14], [20, 0, 0], [21, 0, 0]]
    rows, cols, tokens, sizes = chain_starts(batch, 3, "all")
    assert rows == [0] * 5 + [1] * 2 and cols == [2, 3, 4, 5, 6, 1, 2] and sizes == [3, 3, 3, 2, 1, 2, 1]
    assert tokens[1] == [11, 12, 13] and tokens[3] == [13, 14, 0] and tokens[5] == [20, 21, 0]
    rows, cols, tokens, sizes = chain_starts(batch, 3, "all", stride=2)  # offsets: 60 % 2 = 0, 41 % 2 = 1
    assert rows == [0, 0, 0, 1] and cols == [2, 4, 6, 2] and tokens[1] == [12, 13, 14] and tokens[3] == [21, 0, 0]


def test_windows_cross_group_ends():
    from hamburger.core.packing import TrainBatch, group_windows
    batch = TrainBatch([[1, 2, 3], [4, 5]], [[10, 11, 12, 13, 14], [20, 21]], [[2, 3], [1, 1]])
    tokens, sizes, where = group_windows(batch, 3)
    assert tokens.tolist() == [[10, 11, 12], [12, 13, 14], [20, 21, 0], [21, 0, 0]]
    assert sizes.tolist() == [3, 3, 2, 1] and where.tolist() == [0, 1, 2, 2, 3, 4, 5, 6, 6]


def test_windows_train_the_msd_after_every_slot_with_each_tokens_own_teacher(env, tmp_path):
    """stage full, msd_chains windows: each slot's MSD learns the next max_steps tokens across the group's end, each
    with the unmerged base's distribution at that token as its KL target; groups that are full windows already
    (max_steps tokens, or the response's end) give exactly the groups' outputs."""
    from hamburger.core.packing import TrainBatch, group_windows
    trainer = Trainer(config(env, tmp_path / "w", base_mode="frozen", msd_chains="windows", stop_target="accepted",
                             kl_weight=1.0, decoder_init="random"))
    model = trainer.model
    model.loss_chunk = 0
    prompts = [[1, 30, 31], [1, 40]]
    full = TrainBatch(prompts, [[10, 11, 12, 13, 14, 15, 16, 17, 18], [20, 21, 22]], [[4, 4, 1], [3]])
    with torch.no_grad():
        model.base.get_output_embeddings().weight.mul_(4.0)
        a, b = model.training_forward(full, model.teacher_states(full), windows=True), \
            model.training_forward(full, model.teacher_states(full))
        assert torch.equal(a.targets, b.targets) and torch.allclose(a.loss, b.loss)
        cut = TrainBatch(prompts, full.response_ids, [[1, 2, 3, 2, 1], [2, 1]])
        out = model.training_forward(cut, model.teacher_states(cut), windows=True)
        teacher = model.teacher_logits(cut)
    _, sizes, where = group_windows(cut, 4)
    assert sizes.tolist() == [4, 4, 4, 3, 1, 3, 1]
    assert out.targets.tolist() == [sum(cut.response_ids, [])[i] for i in where]
    expected = torch.nn.functional.kl_div(out.token_logits.log_softmax(-1), teacher[where].log_softmax(-1),
                                          log_target=True, reduction="batchmean")
    assert out.kl.item() > 0.01 and torch.allclose(out.kl, expected, rtol=1e-4)
    with pytest.raises(HamburgerError, match="needs stage full"):
        config(env, tmp_path / "x", stage="msd", base_mode="frozen", msd_chains="windows", stop_target="accepted")
    with pytest.raises(HamburgerError, match="stop_target accepted"):
        config(env, tmp_path / "x", msd_chains="windows")


def test_msd_soft_targets_are_the_base_distribution_of_each_micro_token(env, tmp_path):
    trainer = Trainer(config(env, tmp_path / "msd", stage="msd", base_mode="frozen",
                             msd_chains="all", stop_target="accepted", kl_weight=1.0, decoder_init="random",
                             eval_data=env["data"], max_train_steps=40))
    from hamburger.train.batching import to_batch
    batch = to_batch(trainer.rows[:5])
    with torch.no_grad():  # a sharper shared LM head: distributions far from uniform, a KL clearly > 0
        trainer.model.base.get_output_embeddings().weight.mul_(4.0)
        out = trainer.net(batch)
        teacher = trainer.model.teacher_logits(batch)  # the unmerged base's logits for every response token
    # Direct computation: a chain from response token s holds tokens s..s+k-1, whose teacher rows are s..s+k-1.
    index, offset = [], 0
    for r in batch.response_ids:
        for s in range(len(r)):
            index += [offset + s + j for j in range(min(4, len(r) - s))]
        offset += len(r)
    assert out.targets.tolist() == [sum(batch.response_ids, [])[i] for i in index]
    micro = out.micro_index > 0
    assert torch.allclose(out.token_logits[~micro], teacher[torch.tensor(index)][~micro], atol=1e-4)
    expected = torch.nn.functional.kl_div(out.token_logits[micro].log_softmax(-1),
                                          teacher[torch.tensor(index)][micro].log_softmax(-1), log_target=True,
                                          reduction="batchmean")
    assert out.kl.item() > 0.01 and torch.allclose(out.kl, expected, rtol=1e-4)
    assert torch.allclose(out.loss, out.token_loss + 0.5 * out.stop_loss + out.kl, rtol=1e-5)
    before = trainer.evaluate()
    assert trainer.train() == 0
    after = trainer.evaluate()
    assert after["token_acc_micro"][1] > before["token_acc_micro"][1] and after["stop_acc"] > before["stop_acc"]
    with pytest.raises(HamburgerError, match="stop_target accepted"):
        config(env, tmp_path / "x", stage="msd", base_mode="frozen", msd_chains="all")
    with pytest.raises(HamburgerError, match="needs stage msd"):
        config(env, tmp_path / "x", msd_chains="all", stop_target="accepted")


def test_max_repeat_leaves_out_the_training_rows_that_repeat_themselves(env, tmp_path, char_tokenizer, capsys):
    data = write_dataset(tmp_path / "loops.jsonl", char_tokenizer)
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    loop, echo = [11, 12, 13, 14] * 3, [11, 12, 13, 14, 11, 12, 13, 14, 20, 21]  # rep4 5/9 and 1/7
    for row, response in zip(rows, [loop, loop, echo]):
        row["response_ids"], row["groups"] = response, [2] * (len(response) // 2)
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    fresh = [r["response_ids"] for r in rows[3:]]  # (random 4-12 tokens from 50: no 4-gram twice)
    assert [r.response_ids for r in Trainer(config(env, tmp_path / "a", data=str(data))).rows] == [
        r["response_ids"] for r in rows]
    assert [r.response_ids for r in Trainer(config(env, tmp_path / "b", data=str(data), max_repeat=0.5)).rows] == [
        echo] + fresh
    assert "max_repeat 0.5: training on 22 of 24 rows" in capsys.readouterr().err
    strict = Trainer(config(env, tmp_path / "c", data=str(data), max_repeat=0.0, eval_data=str(data)))
    assert [r.response_ids for r in strict.rows] == fresh and len(strict.eval_rows) == 24  # (held-out rows all kept)
    assert max(i for _, _, batch in strict.plan.steps for i in batch) < len(fresh)
    loops = tmp_path / "only-loops.jsonl"
    loops.write_text("".join(json.dumps(row) + "\n" for row in rows[:2]))
    loops.with_name(loops.name + ".meta.json").write_text(Path(f"{data}.meta.json").read_text())
    with pytest.raises(HamburgerError, match="max_repeat 0.5 leaves none of the 2 rows"):
        Trainer(config(env, tmp_path / "d", data=str(loops), max_repeat=0.5))
    with pytest.raises(HamburgerError, match="max_repeat must be in"):
        config(env, tmp_path / "e", max_repeat=1.5)


def test_config_and_data_errors(env, tmp_path, char_tokenizer, capsys):
    with pytest.raises(HamburgerError, match="unknown key.*bogus.*valid keys: base, init"):
        TrainConfig.from_dict({"bogus": 1})
    with pytest.raises(HamburgerError, match="base_mode must be one of"):
        TrainConfig.from_dict({"base_mode": "half"})
    with pytest.raises(HamburgerError, match="token_loss_weight 0 needs kl_weight > 0"):
        TrainConfig.from_dict({"token_loss_weight": 0.0})
    with pytest.raises(HamburgerError, match="token_loss_weight must be >= 0"):
        TrainConfig.from_dict({"token_loss_weight": -1.0, "kl_weight": 1.0})
    with pytest.raises(HamburgerError, match="kl_mix must be in"):
        TrainConfig.from_dict({"kl_mix": 0.5})
    with pytest.raises(HamburgerError, match="kl_mix must be in"):
        TrainConfig.from_dict({"kl_mix": 1.5, "kl_weight": 1.0})
    with pytest.raises(HamburgerError, match="lr_base must be float"):
        build_config(None, ["lr_base=fast"])
    assert build_config(None, ["lr_base=1e-4", "lora_targets=[q_proj,v_proj]"]).lr_base == 1e-4
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("lr_grafted: 1e-3\nbatch_sise: 4\n")
    assert cli_main(["train", "--config", str(cfg_file), "--data", env["data"], "--out", str(tmp_path / "r")]) == 1
    assert "unknown key(s) ['batch_sise']" in capsys.readouterr().err
    toml = tmp_path / "c.toml"
    toml.write_text("base_mode = 'frozen'\nepochs = 2\n")
    assert build_config(str(toml), []).epochs == 2.0
    with pytest.raises(HamburgerError, match="does not exist"):
        Trainer(config(env, tmp_path / "m", data=str(tmp_path / "missing.jsonl")))
    other = write_dataset(tmp_path / "other.jsonl", char_tokenizer, meta_overrides={
        "tokenizer": {"name": "x", "vocab_size": 50000, "vocab_hash": "0"}})
    with pytest.raises(HamburgerError, match="another tokenizer"):
        Trainer(config(env, tmp_path / "o", data=str(other)))
    wide = write_dataset(tmp_path / "wide.jsonl", char_tokenizer, max_steps=6)
    with pytest.raises(HamburgerError, match="max_steps"):
        Trainer(config(env, tmp_path / "w", data=str(wide)))


def test_training_doc_names_every_setting():  # (`hamburger train --help` sends users there for every setting)
    text = (ROOT / "docs" / "training.md").read_text()
    missing = [f for f in TrainConfig.field_names()
               if not re.search(rf"`{f}\b|--{f.replace('_', '-')}\b", text)]
    assert missing == []


def test_batches_are_bucketed_deterministic_and_sharded():
    lengths = [int(x) for x in torch.randint(5, 200, (500,), generator=torch.Generator().manual_seed(0))]
    a = epoch_batches(lengths, 16, 0, 8, seed=1, epoch=0)
    assert a == epoch_batches(lengths, 16, 0, 8, seed=1, epoch=0) != epoch_batches(lengths, 16, 0, 8, 1, 1)
    assert sorted(i for b in a for i in b) == list(range(500))

    def waste(batches):
        return sum(len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in batches) / sum(lengths)

    unbucketed = waste(epoch_batches(lengths, 16, 0, 1, seed=1, epoch=0))  # windows of one batch: no sorting
    assert waste(a) < 0.15 < 0.5 < unbucketed and waste(epoch_batches(lengths, 16, 0, 64, 1, 0)) < 0.05
    by_tokens = epoch_batches(lengths, 0, 1024, 8, seed=1, epoch=0)
    assert all(len(b) * max(lengths[i] for i in b) <= 1024 for b in by_tokens if len(b) > 1)
    plan = make_plan(lengths, 16, 0, 8, seed=1, epochs=1.5, max_train_steps=0)
    assert len(plan.steps) == round(1.5 * len(a)) and plan.steps[len(a)][:2] == (1, 0)
    parts = [mb for rank in range(3) for mb in shard(a[0], lengths, 3, rank, 2)]
    assert sorted(i for mb in parts for i in mb) == sorted(a[0]) and len(parts) == 6
    assert lr_at(0, 100, 1.0, 0.1, 10) == pytest.approx(0.1) and lr_at(99, 100, 1.0, 0.1, 10) > 0.1
    assert lr_at(100, 100, 1.0, 0.1, 10) == pytest.approx(0.1)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_lora_zero_init_disable_and_merge(family):
    model = tiny_hamburger(family, seed=2)
    ids = torch.tensor([[1, 20, 30, 40, 50, 60]])
    ref = model.base(ids).logits
    names = add_lora(model.base, r=4, alpha=8)
    assert len(names) == 7 * 4 and all(n.startswith("model.layers.") for n in names)
    assert torch.equal(model.base(ids).logits, ref)  # B = 0: an untouched adapter changes nothing
    with torch.no_grad():
        for _, m in lora_modules(model.base):
            m.lora_B.normal_(std=0.05)
    changed = model.base(ids).logits
    assert not torch.allclose(changed, ref, atol=1e-3)
    with adapters_disabled(model.base):
        assert torch.allclose(model.base(ids).logits, ref, atol=1e-6)
    assert torch.equal(model.base(ids).logits, changed)
    merge_lora(model.base)
    assert not list(lora_modules(model.base))
    assert torch.allclose(model.base(ids).logits, changed, atol=1e-4)


def test_lora_checkpoint_roundtrip_generates_identically(tmp_path, char_tokenizer):
    model = tiny_hamburger("qwen2", seed=4)
    base_dir = tmp_path / "base"
    model.base.save_pretrained(base_dir)
    char_tokenizer.save_pretrained(base_dir)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(model.base))
    add_lora(model.base, r=4, alpha=8)
    with torch.no_grad():
        for _, m in lora_modules(model.base):
            m.lora_B.normal_(std=0.05)
    ckpt = save_checkpoint(model, tmp_path / "ckpt", info)
    assert (ckpt / LORA_FILE).is_file() and len(load_file(str(ckpt / LORA_FILE))) == 2 * 7 * 4
    loaded, tokenizer, _ = load_checkpoint(ckpt)
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.5)
    a = generate(model, char_tokenizer, [1, 40, 41, 42], cfg)
    b = generate(loaded, tokenizer, [1, 40, 41, 42], cfg)
    assert (a.token_ids, a.groups) == (b.token_ids, b.groups)
    merged, _, _ = load_checkpoint(ckpt, merge_adapters=True)
    assert not list(lora_modules(merged.base))
    ids = torch.tensor([[1, 40, 41, 42, 43]])
    assert torch.allclose(merged.base(ids).logits, loaded.base(ids).logits, atol=1e-4)
    with pytest.raises(HamburgerError, match="merge them first"):
        save_checkpoint(model, tmp_path / "bad", info, save_base=True)


def torchrun(args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "hamburger.cli", "train", *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def dist_args(env, steps: int, **extra) -> list[str]:
    settings = dict(base=env["base"], batch_size=8, epochs=100, max_train_steps=steps, lr_grafted=3e-3, lr_base=1e-3,
                    min_lr=1.0, warmup_steps=2, threads=1, progress="false", decoder_layers=1, lora_r=4,
                    save_every=0, kl_weight=0.5, **extra)  # min_lr >= peak: flat after warm-up
    return [a for k, v in settings.items() for a in ("--set", f"{k}={v}")] + ["--data", env["data"]]


def assert_same_weights(a_dir: Path, b_dir: Path, atol: float) -> None:
    for name in ("grafted.safetensors", LORA_FILE):
        a, b = load_file(str(a_dir / "last" / name)), load_file(str(b_dir / "last" / name))
        assert a.keys() == b.keys()
        for k in a:
            assert torch.allclose(a[k], b[k], atol=atol, rtol=0), (name, k, (a[k] - b[k]).abs().max())


@pytest.fixture(scope="module")
def single_process_run(env, tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    assert cli_main(["train", "--out", str(out), "--device", "cpu", *dist_args(env, 4)]) == 0
    return out


def test_two_ddp_processes_match_single_process(env, tmp_path, single_process_run):
    """torchrun, 2 gloo processes: replicas agree and equal one process with the same global batch."""
    torchrun(["--out", str(tmp_path / "ddp"), *dist_args(env, 4)])
    lines = [json.loads(x) for x in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert lines[0]["world"] == 2 and lines[-1]["kind"] == "end" and lines[-1]["replica_max_diff"] == 0.0
    assert_same_weights(tmp_path / "ddp", single_process_run, atol=2e-5)


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_two_processes_compiled_layer_by_layer_match_single_process(env, tmp_path, single_process_run, parallel):
    """compile under DDP and FSDP: each process compiles its base's layers (`compile_region: layer`, backend eager:
    traced, no codegen) outside the wrapper, on the same parameters, so gradients still reach the wrapper's
    reduction (a compiled deep copy of each layer fails this)."""
    torchrun(["--out", str(tmp_path / parallel), *dist_args(env, 4, parallel=parallel, compile="true",
                                                             compile_backend="eager", compile_region="layer")])
    lines = [json.loads(x) for x in (tmp_path / parallel / "metrics.jsonl").read_text().splitlines()]
    assert lines[0]["world"] == 2 and lines[-1]["kind"] == "end"
    assert_same_weights(tmp_path / parallel, single_process_run, atol=2e-5)


def test_two_fsdp_processes_save_resume_and_match_single_process(env, tmp_path, single_process_run):
    """FSDP (fully_shard on CPU/gloo): 2 steps, stop, resume to 4: equals 4 steps in one process."""
    torchrun(["--out", str(tmp_path / "fsdp"), *dist_args(env, 2, parallel="fsdp")])
    torchrun(["--out", str(tmp_path / "fsdp"), "--resume", *dist_args(env, 4, parallel="fsdp")])
    steps = [json.loads(x)["step"] for x in (tmp_path / "fsdp" / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] == 4
    assert_same_weights(tmp_path / "fsdp", single_process_run, atol=2e-5)


def test_accepted_stop_target_also_stops_before_wrong_micro_tokens():
    from hamburger.core.packing import TrainBatch

    batch = TrainBatch([[1, 40, 41], [1, 50, 60, 70]], [[5, 6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 16]],
                       [[3, 4], [1, 4]])
    model = tiny_hamburger("llama")
    with torch.no_grad():
        plain = model.training_forward(batch)
        model.config.stop_target = "accepted"
        accepted = model.training_forward(batch)
    # tokens in order: group ends at 2, 6 (row 0) and 7, 11 (row 1)
    assert plain.stop_targets.tolist() == [0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1]
    right = (plain.token_logits.argmax(-1) == plain.targets).tolist()
    want = [1.0 if end or not right[i + 1] else 0.0 for i, end in enumerate(plain.stop_targets.tolist())]
    assert accepted.stop_targets.tolist() == want
    assert not all(right)  # a random model gets some wrong, so the two labels really differ
    assert accepted.token_loss == plain.token_loss  # only the stop label changes
    with pytest.raises(HamburgerError, match="stop_target"):
        TrainConfig(stop_target="maybe").validate()
