"""Checkpoints: save -> load gives identical outputs; a wrong base is refused; bad folders are clear errors."""

import json

import pytest
import torch

from hamburger.core.base import BaseInfo, weights_fingerprint
from hamburger.core.checkpoint import CONFIG_FILE, WEIGHTS_FILE, load_checkpoint, read_meta, save_checkpoint
from hamburger.errors import HamburgerError
from hamburger.engine.generate import generate
from hamburger.engine.sampling import DecodingConfig
from tests.helpers import ROOT, save_tiny, save_tiny_lora, tiny_base, tiny_hamburger


def test_save_load_identical_outputs(tmp_path, char_tokenizer):
    model, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    loaded, tokenizer, _ = load_checkpoint(ckpt)
    for name, tensor in model.grafted_state_dict().items():
        assert torch.equal(tensor, loaded.grafted_state_dict()[name]), name
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.5)
    a = generate(model, char_tokenizer, [1, 40, 41, 42], cfg)
    b = generate(loaded, tokenizer, [1, 40, 41, 42], cfg)
    assert (a.token_ids, a.groups) == (b.token_ids, b.groups)
    assert not list(tmp_path.glob("*.tmp")), "no temporary folder is left behind"


def test_wrong_base_is_refused(tmp_path, char_tokenizer):
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    other = tmp_path / "other"
    tiny_base("llama", seed=99).save_pretrained(other)
    char_tokenizer.save_pretrained(other)
    with pytest.raises(HamburgerError, match="fingerprint"):
        load_checkpoint(ckpt, base=str(other))


def test_fingerprint_ignores_dtype():
    base = tiny_base("llama", seed=1)
    assert weights_fingerprint(base) == weights_fingerprint(tiny_base("llama", seed=1))
    assert weights_fingerprint(base) != weights_fingerprint(tiny_base("llama", seed=2))


def test_bad_checkpoints_give_clear_errors(tmp_path, char_tokenizer):
    with pytest.raises(HamburgerError, match="does not exist"):
        read_meta(tmp_path / "missing")
    with pytest.raises(HamburgerError, match="not a HAMburger checkpoint"):
        read_meta(tmp_path)
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    (ckpt / CONFIG_FILE).write_text("{not json")
    with pytest.raises(HamburgerError, match="not valid JSON"):
        read_meta(ckpt)
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    meta = json.loads((ckpt / CONFIG_FILE).read_text())
    meta["config"]["bogus"] = 1
    (ckpt / CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(HamburgerError, match="unknown HAMburger config fields"):
        load_checkpoint(ckpt)
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    (ckpt / WEIGHTS_FILE).write_bytes(b"garbage")
    with pytest.raises(HamburgerError, match="cannot read"):
        load_checkpoint(ckpt)


def test_reference_is_the_unchanged_base(tmp_path, char_tokenizer):
    """Baselines of bench/eval must run the original base, not the LoRA-adapted one."""
    from hamburger.core.checkpoint import load_reference

    model, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    merged, tokenizer, _ = load_checkpoint(ckpt, merge_adapters=True)
    reference = load_reference(ckpt, merged)
    assert reference is not merged
    prompt = [1, 40, 41, 42]
    base_greedy = reference.base.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False,
                                          attention_mask=torch.ones(1, len(prompt), dtype=torch.long))[0, len(prompt):]
    pristine = tiny_hamburger("llama", seed=3).base  # the base the LoRA was put on
    expected = pristine.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False,
                                 attention_mask=torch.ones(1, len(prompt), dtype=torch.long))[0, len(prompt):]
    assert base_greedy.tolist() == expected.tolist()
    frozen_ckpt = save_tiny(tmp_path / "frozen", char_tokenizer)[1]
    frozen = load_checkpoint(frozen_ckpt)[0]
    assert load_reference(frozen_ckpt, frozen) is frozen  # nothing changed the base: share it


def test_the_reference_shares_the_base_weights_the_adapters_left_alone(tmp_path, char_tokenizer):
    """`load_model`'s reference holds the unchanged base once: scoped adapters stay apart from the base, so it is the
    model's base without them; adapters merged into the weights leave only the layers they skip shared."""
    from hamburger import load_model

    pristine = tiny_hamburger("llama", seed=3).base
    prompt = [1, 40, 41, 42]
    expected = pristine.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False,
                                 attention_mask=torch.ones(1, len(prompt), dtype=torch.long))[0, len(prompt):]
    for scope in ("merged", "all"):
        ckpt = save_tiny_lora(tmp_path / scope, char_tokenizer, scope)[1]
        model, _, _, reference = load_model(str(ckpt), reference=True)
        assert reference is not model
        held = {p.data_ptr() for p in model.parameters()}
        shared = {name for name, p in reference.base.named_parameters() if p.data_ptr() in held}
        adapted = {name for name, _ in pristine.named_parameters() if name.endswith("_proj.weight")}
        assert adapted and shared == ({name for name, _ in pristine.named_parameters()} - (adapted if scope == "all"
                                                                                             else set())), scope
        if scope == "merged":  # (the model's base without its adapters: the very parameters, not a second load)
            ours = {id(p) for p in model.parameters()}
            assert all(id(p) in ours for p in reference.base.parameters())
        out = reference.base.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False,
                                      attention_mask=torch.ones(1, len(prompt), dtype=torch.long))[0, len(prompt):]
        assert out.tolist() == expected.tolist(), scope


def test_merged_adapters_match_unmerged(tmp_path, char_tokenizer):
    model, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    cfg = DecodingConfig(max_new_tokens=16, confidence=0.5)
    a = generate(load_checkpoint(ckpt)[0], char_tokenizer, [1, 40, 41, 42], cfg)
    b = generate(load_checkpoint(ckpt, merge_adapters=True)[0], char_tokenizer, [1, 40, 41, 42], cfg)
    assert (a.token_ids, a.groups) == (b.token_ids, b.groups)


def test_export_bf16_halves_the_weights_and_loads(tmp_path, char_tokenizer):
    from hamburger.core.checkpoint import LORA_FILE
    from hamburger.cli.main import main

    model, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    out = tmp_path / "shipped"
    assert main(["export", "--model", str(ckpt), "--out", str(out), "--dtype", "bfloat16",
                 "--default-confidence", "0.6", "--gate", "token_prob", "--prefilter", "0.25", "--single-tail", "1",
                 "--fold-tail", "2"]) == 0
    for name in (WEIGHTS_FILE, LORA_FILE):
        assert (out / name).stat().st_size < 0.6 * (ckpt / name).stat().st_size, name
    loaded = load_checkpoint(out)[0]
    for name, tensor in model.grafted_state_dict().items():
        assert torch.equal(tensor.to(torch.bfloat16).float(), loaded.grafted_state_dict()[name]), name
    assert read_meta(out)["lora"]["r"] == 2 and loaded.config.default_confidence == 0.6
    assert loaded.config.gate == "token_prob" and load_checkpoint(ckpt)[0].config.gate == "stop_head"
    assert loaded.config.prefilter == 0.25 and load_checkpoint(ckpt)[0].config.prefilter == 0.0
    assert loaded.config.single_tail == 1 and load_checkpoint(ckpt)[0].config.single_tail == 0
    assert loaded.config.fold_tail == 2 and load_checkpoint(ckpt)[0].config.fold_tail == 0


def test_config_saved_before_token_aware_stop_head_loads_as_hidden_only():
    from hamburger.core.config import HamburgerConfig

    legacy = {k: v for k, v in HamburgerConfig().to_dict().items() if k != "stop_sees_token"}
    assert HamburgerConfig.from_dict(legacy).stop_sees_token is False
    assert HamburgerConfig().stop_sees_token is True


def test_upgraded_stop_head_computes_the_same(tmp_path, char_tokenizer):
    """recipes/upgrade_stop_head.py: a hidden-only stop head becomes token-aware with the same outputs."""
    import subprocess
    import sys

    base_dir = tmp_path / "base"
    model = tiny_hamburger("llama", seed=3, stop_sees_token=False)
    model.base.save_pretrained(base_dir)
    char_tokenizer.save_pretrained(base_dir)
    ckpt = save_checkpoint(model, tmp_path / "old", BaseInfo(str(base_dir), str(base_dir),
                                                              weights_fingerprint(model.base)))
    script = ROOT / "recipes" / "upgrade_stop_head.py"
    run = subprocess.run([sys.executable, str(script), str(ckpt), str(tmp_path / "new")], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    new = load_checkpoint(tmp_path / "new")[0]
    assert new.config.stop_sees_token and not load_checkpoint(ckpt)[0].config.stop_sees_token
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.5)
    a = generate(model, char_tokenizer, [1, 40, 41, 42], cfg)
    b = generate(new, char_tokenizer, [1, 40, 41, 42], cfg)
    assert (a.token_ids, a.groups) == (b.token_ids, b.groups)
    assert a.p_continue == pytest.approx(b.p_continue, abs=1e-6)  # a wider product: other rounding


def test_export_drop_lora_gives_the_unchanged_base(tmp_path, char_tokenizer):
    from hamburger.cli.main import main

    model, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    out = tmp_path / "grafted-only"
    assert main(["export", "--model", str(ckpt), "--out", str(out), "--drop-lora", "--dtype", "float32"]) == 0
    assert "lora" not in read_meta(out)
    loaded = load_checkpoint(out)[0]
    cfg = DecodingConfig(max_new_tokens=12, confidence=1.0)
    pristine = tiny_hamburger("llama", seed=3)
    a = generate(loaded, char_tokenizer, [1, 40, 41, 42], cfg)
    b = generate(pristine, char_tokenizer, [1, 40, 41, 42], cfg)
    assert a.token_ids == b.token_ids
    assert main(["export", "--model", str(out), "--out", str(tmp_path / "again"), "--drop-lora"]) == 1


def edit_meta(ckpt, change) -> None:
    meta = json.loads((ckpt / CONFIG_FILE).read_text())
    change(meta)
    (ckpt / CONFIG_FILE).write_text(json.dumps(meta))


@pytest.mark.parametrize("change, message", [
    (lambda m: m["base"].pop("fingerprint"), "'base' must be an object"),
    (lambda m: m.update(base="x"), "'base' must be an object"),
    (lambda m: m["base"].update(spec=5), "'base' must be an object"),
    (lambda m: m.update(config="x"), "'config' must be an object"),
    (lambda m: m.update(lora="x"), "'lora' must be an object"),
    (lambda m: m.update(base_weights=7), "base_weights"),
])
def test_malformed_config_entries_are_one_line_errors(tmp_path, char_tokenizer, change, message):
    _, ckpt, _ = save_tiny(tmp_path, char_tokenizer)
    edit_meta(ckpt, change)
    with pytest.raises(HamburgerError, match=message):
        load_checkpoint(ckpt)


def test_files_a_checkpoint_names_stay_in_its_folder(tmp_path, char_tokenizer):
    """base_weights and lora.file may not point outside the folder: not absolute, not ../, not via a symlink."""
    model, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    outside_base = tmp_path / "base"  # a perfectly loadable base folder, but not the checkpoint's
    for name in (str(outside_base), "../base"):
        edit_meta(ckpt, lambda m: m.update(base_weights=name))
        with pytest.raises(HamburgerError, match="outside the checkpoint folder"):
            load_checkpoint(ckpt)
    edit_meta(ckpt, lambda m: m.update(base_weights=None))
    (tmp_path / "elsewhere").mkdir()
    (ckpt / "lora.safetensors").rename(tmp_path / "elsewhere" / "lora.safetensors")
    for name in (str(tmp_path / "elsewhere" / "lora.safetensors"), "../elsewhere/lora.safetensors"):
        edit_meta(ckpt, lambda m: m["lora"].update(file=name))
        with pytest.raises(HamburgerError, match="outside the checkpoint folder"):
            load_checkpoint(ckpt)
    (ckpt / "link.safetensors").symlink_to(tmp_path / "elsewhere" / "lora.safetensors")
    edit_meta(ckpt, lambda m: m["lora"].update(file="link.safetensors"))
    with pytest.raises(HamburgerError, match="outside the checkpoint folder"):
        load_checkpoint(ckpt)
    (ckpt / "link.safetensors").unlink()
    (tmp_path / "elsewhere" / "lora.safetensors").rename(ckpt / "inside.safetensors")
    edit_meta(ckpt, lambda m: m["lora"].update(file="./inside.safetensors"))
    load_checkpoint(ckpt)  # a file inside the folder, under any name, is fine


class Payload:
    """A pickle that runs a command when unpickled without weights_only."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("content", ["state_dict", "payload"])
def test_pickled_base_weights_are_refused(tmp_path, char_tokenizer, content):
    import pickle

    model = tiny_hamburger("llama", seed=3)
    info = BaseInfo("tiny", "tiny", weights_fingerprint(model.base))
    ckpt = save_checkpoint(model, tmp_path / "ckpt", info, tokenizer=char_tokenizer, save_base=True)
    load_checkpoint(ckpt)  # the saved (safetensors) base loads
    for f in (ckpt / "base").glob("*.safetensors"):
        f.unlink()
    marker = tmp_path / "pwned"
    if content == "state_dict":
        torch.save(model.base.state_dict(), ckpt / "base" / "pytorch_model.bin")
    else:
        (ckpt / "base" / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(marker)))
    with pytest.raises(HamburgerError, match="safetensors"):
        load_checkpoint(ckpt)
    assert not marker.exists()


def test_draft_vocabulary_travels_with_the_checkpoint(tmp_path, char_tokenizer):
    """`write_draft_vocab` puts draft ids into a checkpoint; loading, saving and exporting keep them; bad ids are
    refused with one line; a checkpoint without the file has none."""
    from safetensors.torch import save_file

    from hamburger.cli.main import main
    from hamburger.core.checkpoint import DRAFT_VOCAB_FILE, write_draft_vocab

    ckpt = save_tiny(tmp_path, char_tokenizer)[1]
    assert load_checkpoint(ckpt)[0].draft_vocab is None
    write_draft_vocab(ckpt, torch.tensor([4, 7, 40]))
    loaded, _, info = load_checkpoint(ckpt)
    assert loaded.draft_vocab.tolist() == [4, 7, 40]
    save_checkpoint(loaded, tmp_path / "again", info)
    assert load_checkpoint(tmp_path / "again")[0].draft_vocab.tolist() == [4, 7, 40]
    assert main(["export", "--model", str(ckpt), "--out", str(tmp_path / "shipped")]) == 0
    assert load_checkpoint(tmp_path / "shipped")[0].draft_vocab.tolist() == [4, 7, 40]
    vocab = loaded.base.get_output_embeddings().weight.shape[0]
    for bad in (torch.tensor([7, 4]), torch.tensor([4, 4]), torch.tensor([4, vocab]), torch.tensor([-1, 4]),
                torch.tensor([4.0, 7.0]), torch.tensor([[4, 7]]), torch.tensor([], dtype=torch.long)):
        save_file({"ids": bad}, str(ckpt / DRAFT_VOCAB_FILE))
        with pytest.raises(HamburgerError, match="draft_vocab"):
            load_checkpoint(ckpt)
    (ckpt / DRAFT_VOCAB_FILE).write_text("not safetensors")
    with pytest.raises(HamburgerError, match="draft vocabulary"):
        load_checkpoint(ckpt)
    with pytest.raises(HamburgerError, match="not a HAMburger checkpoint"):
        write_draft_vocab(tmp_path, torch.tensor([1]))


def test_shipped_default_model_has_a_draft_vocabulary():
    model = load_checkpoint(ROOT / "hamburger" / "default_model")[0]
    assert len(model.draft_vocab) == 4096
