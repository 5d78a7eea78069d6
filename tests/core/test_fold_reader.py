"""A checkpoint's fold reader: LoRA adapters trained at `lora_scope: after_fold` (verify_fold's token-keeping folds),
shipped beside a checkpoint's own adapters and taken in their place where such a fold decodes."""

import json

import pytest
import torch
from safetensors.torch import load_file

from hamburger.core.base import BaseInfo, weights_fingerprint
from hamburger.core.checkpoint import (CONFIG_FILE, FOLD_READER_FILE, add_fold_reader, export, load_checkpoint,
                                       read_meta, save_checkpoint)
from hamburger.core.loading import fold_model, reads_with_fold_reader
from hamburger.core.lora import add_lora, is_adapter_weight, lora_modules, lora_state_dict
from hamburger.engine.folding import DEFAULT_FOLD, READER_FOLD, parse_folding
from hamburger.errors import HamburgerError
from tests.helpers import save_tiny_lora, tiny_base, tiny_hamburger

KEEP_FIRST = parse_folding("segments:4:first:steps=6:p=0.7")


def save_reader(tmp_path, scope: str = "after_fold", seed: int = 3):
    """A tiny checkpoint with non-zero adapters at ``scope`` on `tiny_base("llama", seed)` (saved in tmp/base-SEED)."""
    base_dir = tmp_path / f"base-{seed}"
    model = tiny_hamburger("llama", seed=seed, lora_scope=scope)
    add_lora(model.base, r=2, alpha=4.0)
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for _, module in lora_modules(model.base):
            module.lora_B.copy_(torch.randn(module.lora_B.shape, generator=gen) * 0.5)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(tiny_base("llama", seed=seed)))
    if not base_dir.exists():
        tiny_base("llama", seed=seed).save_pretrained(base_dir)
    return model, save_checkpoint(model, tmp_path / f"reader-{scope}-{seed}", info)


def test_a_fold_reader_ships_beside_the_checkpoint_and_is_loaded_only_for_token_keeping_folds(tmp_path, char_tokenizer):
    from hamburger.cli.main import main

    main_model, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    reader, reader_dir = save_reader(tmp_path)
    out = tmp_path / "shipped"
    assert main(["export", "--model", str(ckpt), "--out", str(out), "--dtype", "float32",
                 "--fold-reader", str(reader_dir)]) == 0
    meta = read_meta(out)
    assert meta["fold_reader"]["fold"] == READER_FOLD and meta["lora"] == read_meta(ckpt)["lora"]
    # Every mode but a token-keeping fold loads the checkpoint's own adapters, as before.
    own = load_checkpoint(out)[0]
    assert own.config.lora_scope == "all"
    assert all(torch.equal(a, b) for a, b in zip(lora_state_dict(own.base).values(),
                                                 lora_state_dict(main_model.base).values()))
    # The fold reader: the reader's adapters (its own scope) on the checkpoint's grafted modules and base.
    folding = load_checkpoint(out, fold_reader=True)[0]
    assert folding.config.lora_scope == "after_fold"
    theirs = lora_state_dict(reader.base)
    assert lora_state_dict(folding.base).keys() == theirs.keys()
    assert all(torch.equal(v, theirs[k]) for k, v in lora_state_dict(folding.base).items())
    assert all(torch.equal(v, main_model.grafted_state_dict()[k]) for k, v in folding.grafted_state_dict().items())
    assert reads_with_fold_reader(str(out), KEEP_FIRST)
    assert reads_with_fold_reader(str(out), parse_folding(READER_FOLD))
    assert not reads_with_fold_reader(str(out), parse_folding(DEFAULT_FOLD))  # (the default stores, drops nothing)
    assert not reads_with_fold_reader(str(out), parse_folding("segments:8"))  # (a merged fold: the own adapters)
    assert not reads_with_fold_reader(str(out), parse_folding("segments:8:none:bits=8"))  # (a stored history)
    assert not reads_with_fold_reader(str(ckpt), KEEP_FIRST)
    second = fold_model(str(out), KEEP_FIRST, own)
    assert second.config.lora_scope == "after_fold"
    assert fold_model(str(ckpt), KEEP_FIRST, own) is own
    # The second load holds the base and the grafted modules of the first, not a copy; the adapters are its own.
    ours, theirs_ = dict(second.named_parameters()), dict(own.named_parameters())
    shared = {n for n, p in ours.items() if p.data_ptr() == theirs_[n].data_ptr()}
    assert {n for n in ours if not is_adapter_weight(n)} <= shared  # (and equal adapter weights, harmlessly)
    assert not any(n.endswith("lora_B") for n in shared)
    assert all(torch.equal(v, theirs[k]) for k, v in lora_state_dict(second.base).items())
    # An export of the export carries the reader, in its dtype.
    again = tmp_path / "again"
    assert main(["export", "--model", str(out), "--out", str(again)]) == 0
    assert read_meta(again)["fold_reader"] == meta["fold_reader"]
    assert {v.dtype for v in load_file(str(again / FOLD_READER_FILE)).values()} == {torch.bfloat16}


def test_verify_fold_decodes_with_the_fold_reader(tmp_path, char_tokenizer, capsys):
    from hamburger.cli.main import main

    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    _, reader_dir = save_reader(tmp_path)
    add_fold_reader(ckpt, reader_dir, "forwards:0:first", "float32")  # (the tiny base's entropies cut no groups)
    args = ["generate", "--model", str(ckpt), "--max-new-tokens", "40", "--fold", "forwards:0:first", "--draft", "3",
            "--json", "--raw", "hello there"]
    assert main(args) == 0
    with_reader = json.loads(capsys.readouterr().out)
    meta = json.loads((ckpt / CONFIG_FILE).read_text())
    meta.pop("fold_reader")
    (ckpt / CONFIG_FILE).write_text(json.dumps(meta))
    assert main(args) == 0
    without = json.loads(capsys.readouterr().out)
    assert with_reader["kv_slots"] < with_reader["kv_slots_ordinary"], "the test needs folds"
    assert with_reader["token_ids"] != without["token_ids"]


def test_a_fold_reader_for_sampled_decoding_leaves_greedy_rows_to_the_base(tmp_path, char_tokenizer, capsys):
    from hamburger.cli.main import main

    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    _, reader_dir = save_reader(tmp_path)
    fold = "forwards:0:first"  # (the tiny base's entropies cut no groups)
    greedy = ["generate", "--model", str(ckpt), "--max-new-tokens", "40", "--fold", fold, "--draft", "3", "--json",
              "--raw", "hello there"]
    sampled = greedy + ["--temperature", "0.9", "--seed", "5"]

    def tokens(args: list[str]) -> list[int]:
        assert main(args) == 0
        return json.loads(capsys.readouterr().out)["token_ids"]

    def with_reader(**options) -> tuple[list[int], list[int]]:
        if options:
            add_fold_reader(ckpt, reader_dir, fold, "float32", **options)
        else:  # (no adapters at all: the base's reading of the folds)
            meta = read_meta(ckpt)
            for key in ("fold_reader", "lora"):
                meta.pop(key)
            (ckpt / CONFIG_FILE).write_text(json.dumps(meta))
        return tokens(greedy), tokens(sampled)

    only_sampled, everywhere = with_reader(sampled_only=True), with_reader(sampled_only=False)
    assert read_meta(ckpt)["fold_reader"]["sampled_only"] is False
    base = with_reader()
    assert everywhere[0] != base[0] and everywhere[1] != base[1], "the test needs a reader that changes both"
    assert only_sampled == (base[0], everywhere[1])  # greedy: the base's reading; sampled: the reader's
    assert main(["export", "--model", str(ckpt), "--out", str(tmp_path / "x"), "--fold-reader-sampled-only"]) != 0
    assert "needs --fold-reader" in capsys.readouterr().err


@pytest.mark.parametrize("bad, message", [("scope", "is not a fold reader"), ("fold", "keeps a token"),
                                          ("base", "another base")])
def test_a_fold_reader_is_checked(tmp_path, char_tokenizer, bad, message):
    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    _, reader_dir = save_reader(tmp_path, scope="all" if bad == "scope" else "after_fold",
                                seed=4 if bad == "base" else 3)
    with pytest.raises(HamburgerError, match=message):
        add_fold_reader(ckpt, reader_dir, "segments:8" if bad == "fold" else READER_FOLD)
    assert "fold_reader" not in read_meta(ckpt)


def test_the_server_runs_verify_fold_requests_on_the_fold_model():
    from hamburger.serve.scheduler import Scheduler

    model, reader = tiny_hamburger("llama"), tiny_hamburger("llama", seed=1)
    assert Scheduler(model, None, fold_model=reader)._engine("verify_fold").args[0] is reader
    assert Scheduler(model, None)._engine("verify_fold").args[0] is model


@pytest.mark.parametrize("base_mode", ["lora", "full"])
def test_a_training_run_carries_its_init_checkpoints_fold_reader_while_the_base_stays(tmp_path, char_tokenizer,
                                                                                       base_mode, capsys):
    from hamburger.train.config import TrainConfig
    from hamburger.train.trainer import Trainer
    from tests.helpers import write_dataset

    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    _, reader_dir = save_reader(tmp_path)
    add_fold_reader(ckpt, reader_dir, READER_FOLD, "float32")
    data = write_dataset(tmp_path / "data.jsonl", char_tokenizer)
    settings = dict(init=str(ckpt), data=str(data), out=str(tmp_path / "run"), base_mode=base_mode, batch_size=4,
                    max_train_steps=2, lr_base=1e-3, lr_grafted=1e-3, threads=1, progress=False, save_every=1)
    Trainer(TrainConfig.from_dict(settings)).train()
    last = tmp_path / "run" / "last"
    if base_mode == "full":  # (the base trains: a reader of the old base would read it wrongly)
        assert "fold_reader" not in read_meta(last) and not (last / FOLD_READER_FILE).exists()
        assert "fold reader is left out" in capsys.readouterr().err
        return
    assert read_meta(last)["fold_reader"] == read_meta(ckpt)["fold_reader"]
    shipped = load_file(str(ckpt / FOLD_READER_FILE))
    assert load_file(str(last / FOLD_READER_FILE)).keys() == shipped.keys()
    assert all(torch.equal(v, shipped[k]) for k, v in load_file(str(last / FOLD_READER_FILE)).items())
    # A resumed run (which loads `last`, not the init) keeps carrying it, and so does the export.
    Trainer(TrainConfig.from_dict({**settings, "max_train_steps": 3}), resume=True).train()
    assert read_meta(last)["fold_reader"] == read_meta(ckpt)["fold_reader"]
    assert read_meta(export(last, tmp_path / "shipped"))["fold_reader"]["fold"] == READER_FOLD
