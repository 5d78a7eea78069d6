"""HAMburger checkpoints: a folder with a JSON config and safetensors weights, never pickles.

Layout:
  hamburger_config.json   format version, the HamburgerConfig, the base reference (spec + fingerprint)
  grafted.safetensors     embedder, micro-step decoder and stop head
  lora.safetensors        only when the base carries LoRA adapters (their config is in the JSON, "lora")
  draft_vocab.safetensors optional: the token ids ("ids") verify mode's drafts are restricted to (`draft_vocab`)
  draft_ngrams.safetensors optional: verify mode's n-gram draft table (`engine.ngrams.NgramDrafts`)
  verify_drafter.safetensors optional: a micro-step decoder and stop head trained to draft in verify mode
                          ("decoder.*", "stop_head.*"; `modules.Drafter`)
  fold_reader.safetensors optional: LoRA adapters that read verify_fold's token-keeping folds ("fold_reader" in the
                          JSON: their settings and the fold they were trained for); loaded instead of the base's own
                          adapters, at `lora_scope: after_fold`, where such a fold decodes (`load_checkpoint`)
  base/                   only when training changed the base: its full HF folder
A checkpoint that references its base refuses to load on a base with another fingerprint; LoRA
adapters are put on top of that checked base. Every file a checkpoint names (``base_weights``,
``lora.file``) must lie inside its folder, and a saved base must be safetensors: anything else is
refused with one line.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from hamburger.core.base import BaseInfo, load_base
from hamburger.core.config import HamburgerConfig
from hamburger.errors import HamburgerError
from hamburger.core.lora import (LoraLinear, adapter_sets, add_lora, has_lora, load_lora_state_dict, lora_modules,
                                 lora_state_dict, merge_lora, without_adapters)
from hamburger.core.model import HamburgerModel
from hamburger.core.modules import Drafter
from hamburger.engine.ngrams import NGRAM_FILE as DRAFT_NGRAMS_FILE, NgramDrafts

FORMAT = "hamburger-checkpoint/1"
CONFIG_FILE = "hamburger_config.json"
WEIGHTS_FILE = "grafted.safetensors"
LORA_FILE = "lora.safetensors"
DRAFT_VOCAB_FILE = "draft_vocab.safetensors"
VERIFY_DRAFTER_FILE = "verify_drafter.safetensors"
FOLD_READER_FILE = "fold_reader.safetensors"
BASE_DIR = "base"


def is_checkpoint(path: str | Path) -> bool:
    return (Path(path) / CONFIG_FILE).is_file()


def save_checkpoint(model: HamburgerModel, out: str | Path, base_info: BaseInfo, tokenizer=None,
                    save_base: bool = False, extra: dict | None = None,
                    weights_dtype: torch.dtype | None = None) -> Path:
    """Write a checkpoint folder atomically (a killed save leaves the previous one intact).

    ``weights_dtype`` stores the grafted and LoRA weights in that dtype (e.g. bfloat16 to halve a
    shipped checkpoint); loading casts them back to the compute dtype.
    """
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    def stored(v: torch.Tensor) -> torch.Tensor:
        v = v.detach().contiguous().cpu()
        return v.to(weights_dtype) if weights_dtype is not None and v.is_floating_point() else v

    state = {k: stored(v) for k, v in model.grafted_state_dict().items()}
    save_file(state, str(tmp / WEIGHTS_FILE), metadata={"format": FORMAT})
    lora = _lora_meta(model)
    if lora is not None:
        if save_base:
            raise HamburgerError("cannot save a full base that carries LoRA adapters: merge them first")
        lora_state = {k: stored(v) for k, v in lora_state_dict(model.base).items()}
        save_file(lora_state, str(tmp / LORA_FILE), metadata={"format": FORMAT})
    meta = {"format": FORMAT, "config": model.config.to_dict(),
            "base": {"spec": base_info.spec, "fingerprint": base_info.fingerprint},
            "base_weights": BASE_DIR if save_base else None, **(extra or {})}
    if lora is not None:
        meta["lora"] = lora
    if save_base:
        model.base.save_pretrained(str(tmp / BASE_DIR))
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp / BASE_DIR))
    if model.draft_vocab is not None:
        save_file({"ids": model.draft_vocab.detach().cpu().long().contiguous()}, str(tmp / DRAFT_VOCAB_FILE),
                  metadata={"format": FORMAT})
    if model.draft_ngrams is not None:
        model.draft_ngrams.save(tmp / DRAFT_NGRAMS_FILE)
    if model.verify_drafter is not None:
        save_file({k: stored(v) for k, v in model.verify_drafter.state_dict().items()}, str(tmp / VERIFY_DRAFTER_FILE),
                  metadata={"format": FORMAT})
    (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    old = out.with_name(out.name + ".old")
    if out.exists():
        if old.exists():
            shutil.rmtree(old)
        out.rename(old)
    tmp.rename(out)
    if old.exists():
        shutil.rmtree(old)
    return out


def _lora_meta(model: HamburgerModel) -> dict | None:
    """The LoRA settings of the model's base (rank, alpha, wrapped layer names), or None."""
    modules: list[tuple[str, LoraLinear]] = list(lora_modules(model.base))
    if not modules:
        return None
    ranks = {(m.r, m.alpha) for _, m in modules}
    if len(ranks) > 1:
        raise HamburgerError(f"LoRA adapters of mixed rank/alpha {sorted(ranks)} cannot be saved")
    (r, alpha), = ranks
    targets = sorted({name.rsplit(".", 1)[-1] for name, _ in modules})
    meta = {"file": LORA_FILE, "r": r, "alpha": alpha, "targets": targets, "modules": len(modules)}
    sets = adapter_sets(model.base)
    return {**meta, "sets": sets} if sets > 1 else meta


def write_meta(path: str | Path, meta: dict) -> Path:
    """Replace a checkpoint's hamburger_config.json with ``meta`` (atomically: a killed write leaves the old one)."""
    target = Path(path) / CONFIG_FILE
    tmp = target.with_name(target.name + ".partial")
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, target)
    return target


def read_meta(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_dir():
        raise HamburgerError(f"checkpoint {str(path)!r} does not exist or is not a folder")
    if not (path / CONFIG_FILE).is_file():
        raise HamburgerError(f"{str(path)!r} is not a HAMburger checkpoint (no {CONFIG_FILE}); "
                             "make one with `hamburger graft` or `hamburger train`")
    try:
        meta = json.loads((path / CONFIG_FILE).read_text())
    except json.JSONDecodeError as e:
        raise HamburgerError(f"{path / CONFIG_FILE} is not valid JSON: {e}") from e
    if meta.get("format") != FORMAT:
        raise HamburgerError(f"{path}: unsupported checkpoint format {meta.get('format')!r} (expected {FORMAT})")
    for key in ("config", "base"):
        if key not in meta:
            raise HamburgerError(f"{path / CONFIG_FILE} lacks the {key!r} field")
    base, where = meta["base"], path / CONFIG_FILE
    if not isinstance(base, dict) or not all(isinstance(base.get(k), str) and base[k] for k in ("spec", "fingerprint")):
        raise HamburgerError(f"{where}: 'base' must be an object with string 'spec' and 'fingerprint', got {base!r:.100}")
    if not isinstance(meta["config"], dict):
        raise HamburgerError(f"{where}: 'config' must be an object, got {meta['config']!r:.100}")
    for key, file in (("lora", LORA_FILE), ("fold_reader", FOLD_READER_FILE)):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise HamburgerError(f"{where}: {key!r} must be an object, got {meta[key]!r:.100}")
        if meta.get(key):
            inside(path, meta[key].get("file", file), f"{key}.file")
    if meta.get("base_weights"):
        inside(path, meta["base_weights"], "base_weights")
    return meta


def inside(path: Path, name, what: str) -> Path:
    """``path / name`` resolved, refused unless it stays inside the checkpoint folder ``path``: no absolute
    path, no ``..`` and no symlink may lead a checkpoint to load files from elsewhere."""
    if not isinstance(name, str) or not name:
        raise HamburgerError(f"{path / CONFIG_FILE}: {what} must be a path inside the checkpoint, got {name!r:.100}")
    folder = path.resolve()
    target = (folder / name).resolve()
    if target == folder or not target.is_relative_to(folder):
        raise HamburgerError(f"{path / CONFIG_FILE}: {what} {name!r} points outside the checkpoint folder; "
                             "a checkpoint may only name files inside itself")
    return target


def load_checkpoint(path: str | Path, dtype: str | torch.dtype = "float32", base: str | None = None,
                    merge_adapters: bool = False, fold_reader: bool = False):
    """Load (HamburgerModel, tokenizer, BaseInfo) from a checkpoint folder.

    ``base`` points to the base model if it moved (the fingerprint is still checked). LoRA adapters
    are loaded on top of the checked base; ``merge_adapters`` folds them into its weights (faster
    inference, same function up to rounding; the result can no longer be trained as LoRA) unless they
    are scoped (any ``lora_scope`` but ``all``: they act at some slots only), which needs them kept apart.
    ``fold_reader``: where the checkpoint has a fold reader (`add_fold_reader`), its adapters instead of the base's
    own, at ``lora_scope: after_fold`` (the model verify_fold's token-keeping folds decode with).
    """
    path = Path(path)
    meta = read_meta(path)
    if meta.get("base_weights"):
        base_model, tokenizer, info = load_base(str(inside(path, meta["base_weights"], "base_weights")), dtype)
    else:
        base_model, tokenizer, info = load_base(base or meta["base"]["spec"], dtype)
        expected = meta["base"]["fingerprint"]
        if info.fingerprint != expected:
            raise HamburgerError(
                f"checkpoint {path} was trained on base {meta['base']['spec']!r} (fingerprint {expected}), "
                f"but {info.spec!r} has fingerprint {info.fingerprint}: refusing to load a mismatched base")
    config = HamburgerConfig.from_dict(meta["config"])
    lora, sampled_only = meta.get("lora"), False
    if fold_reader and meta.get("fold_reader"):
        config.lora_scope, lora = "after_fold", meta["fold_reader"]
        sampled_only = bool(lora.get("sampled_only"))
    model = HamburgerModel(base_model, config)
    model.fold_reader_sampled_only = sampled_only
    try:
        state = load_file(str(path / WEIGHTS_FILE))
    except (FileNotFoundError, SafetensorError, OSError, ValueError) as e:
        raise HamburgerError(f"cannot read {path / WEIGHTS_FILE}: {e}") from e
    try:
        model.load_grafted_state_dict({k: v.to(model.dtype) for k, v in state.items()})
    except RuntimeError as e:
        raise HamburgerError(f"{path / WEIGHTS_FILE} does not fit its config: {str(e).splitlines()[0]}") from e
    if lora:
        _load_lora(model, path, lora)
        if merge_adapters and config.lora_scope == "all":
            merge_lora(model.base)
    vocab = base_model.get_output_embeddings().weight.shape[0]
    if (path / DRAFT_VOCAB_FILE).is_file():
        model.draft_vocab = load_draft_vocab(path / DRAFT_VOCAB_FILE, vocab)
    if (path / DRAFT_NGRAMS_FILE).is_file():
        model.draft_ngrams = load_draft_ngrams(path / DRAFT_NGRAMS_FILE, vocab)
    if (path / VERIFY_DRAFTER_FILE).is_file():
        model.verify_drafter = load_verify_drafter(path / VERIFY_DRAFTER_FILE, model)
    return model.eval(), tokenizer, info


def load_draft_vocab(file: Path, vocab_size: int) -> torch.Tensor:
    """A checkpoint's draft vocabulary: distinct token ids below ``vocab_size``, sorted (refused otherwise)."""
    try:
        ids = load_file(str(file))["ids"]
    except (SafetensorError, OSError, ValueError, KeyError) as e:
        raise HamburgerError(f"cannot read the draft vocabulary {file}: {e}") from e
    if ids.dim() != 1 or ids.dtype != torch.long or not len(ids) or ids.min() < 0 or ids.max() >= vocab_size \
            or not bool((ids[1:] > ids[:-1]).all()):
        raise HamburgerError(f"{file}: 'ids' must be distinct, sorted int64 token ids below the vocabulary size "
                             f"{vocab_size}")
    return ids


def write_draft_vocab(path: str | Path, ids: torch.Tensor) -> Path:
    """Put a draft vocabulary (e.g. `verify.draft_vocabulary`) into the checkpoint folder ``path``; it is checked
    against the checkpoint's base vocabulary when loaded."""
    return _write_beside(path, DRAFT_VOCAB_FILE, lambda tmp: save_file(
        {"ids": ids.detach().cpu().long().contiguous()}, str(tmp), metadata={"format": FORMAT}))


def load_draft_ngrams(file: Path, vocab_size: int) -> NgramDrafts:
    """A checkpoint's n-gram draft table, counted over this vocabulary's token ids (refused otherwise)."""
    table = NgramDrafts.load(file)
    if table.vocab_size != vocab_size:
        raise HamburgerError(f"{file}: counted over a vocabulary of {table.vocab_size} tokens, the base has "
                             f"{vocab_size}")
    return table


def write_draft_ngrams(path: str | Path, table: NgramDrafts) -> Path:
    """Put an n-gram draft table (`NgramDrafts.count`) into the checkpoint folder ``path``."""
    return _write_beside(path, DRAFT_NGRAMS_FILE, table.save)


def load_verify_drafter(file: Path, model: HamburgerModel) -> Drafter:
    """A checkpoint's verify drafter: a copy of ``model``'s micro-step decoder and stop head with these weights (the
    file must hold exactly their tensors, in their shapes; refused otherwise)."""
    drafter = Drafter.copy_of(model)
    try:
        state = load_file(str(file))
    except (SafetensorError, OSError, ValueError) as e:
        raise HamburgerError(f"cannot read the verify drafter {file}: {e}") from e
    try:
        drafter.load_state_dict({k: v.to(model.dtype) for k, v in state.items()})
    except RuntimeError as e:
        raise HamburgerError(f"{file} does not fit the model's micro-step decoder and stop head: "
                             f"{str(e).splitlines()[0]}") from e
    return drafter.eval()


def write_verify_drafter(path: str | Path, drafter: Drafter, dtype: torch.dtype = torch.bfloat16) -> Path:
    """Put a verify drafter into the checkpoint folder ``path``, its weights stored in ``dtype``."""
    state = {k: v.detach().contiguous().cpu().to(dtype) for k, v in drafter.state_dict().items()}
    return _write_beside(path, VERIFY_DRAFTER_FILE, lambda tmp: save_file(state, str(tmp),
                                                                          metadata={"format": FORMAT}))


def _write_beside(path: str | Path, name: str, write) -> Path:
    """``write(tmp)`` a file, then move it to ``name`` in the checkpoint folder ``path`` (checked to be one) at once."""
    read_meta(path)
    file = Path(path) / name
    tmp = file.with_name(file.name + ".tmp")
    write(tmp)
    tmp.replace(file)
    return file


def load_reference(path: str | Path, model: HamburgerModel, dtype: str | torch.dtype = "float32",
                   base: str | None = None) -> HamburgerModel:
    """The model to compare against: the checkpoint's *unchanged* base, as a HAMburger model that decodes
    it exactly at confidence 1.0. ``model`` itself when training left the base untouched (frozen base); ``model``'s
    base without its adapters (`lora.without_adapters`: the same weights, no copy) when they stay apart from it (not
    merged into its weights); a fresh load of the original base when they were merged or the base was fine-tuned.
    """
    meta = read_meta(path)
    if not meta.get("lora") and not meta.get("base_weights"):
        return model
    if not meta.get("base_weights") and has_lora(model.base):
        base_model = without_adapters(model.base)
    else:
        base_model, _, _ = load_base(base or meta["base"]["spec"], dtype)
    return HamburgerModel(base_model, HamburgerConfig.from_dict(meta["config"])).eval()


def _load_lora(model: HamburgerModel, path: Path, lora: dict) -> None:
    """Put the saved LoRA adapters on the (already fingerprint-checked) base of ``model``."""
    file = inside(path, lora.get("file", LORA_FILE), "lora.file")
    try:
        names = add_lora(model.base, tuple(lora["targets"]), int(lora["r"]), float(lora["alpha"]),
                         int(lora.get("sets", 1)))
        state = load_file(str(file))
    except KeyError as e:
        raise HamburgerError(f"{path / CONFIG_FILE}: the 'lora' entry lacks {e}") from e
    except (FileNotFoundError, SafetensorError, OSError, ValueError) as e:
        raise HamburgerError(f"cannot read {file}: {e}") from e
    if lora.get("modules") not in (None, len(names)):
        raise HamburgerError(f"{path}: LoRA was saved on {lora['modules']} layers, this base has {len(names)}")
    load_lora_state_dict(model.base, state)


def add_fold_reader(checkpoint: str | Path, reader: str | Path, fold: str, dtype: str = "bfloat16",
                    sampled_only: bool = False) -> Path:
    """Give ``checkpoint`` the LoRA adapters of ``reader`` (a checkpoint trained with ``verify_fold`` at ``lora_scope:
    after_fold``, on the same base) as its fold reader, stored in ``dtype``, with ``fold`` (the `--fold` spec they were
    trained for, which must keep a token) recorded beside them; replaces a reader it had. Its own adapters and modules
    are untouched: verify_fold's token-keeping folds decode with the reader (`load_checkpoint(fold_reader=True)`),
    every other mode as before. ``sampled_only``: the reader acts on sampling rows only (greedy rows read their folds
    with the base, `HamburgerModel.fold_reader_sampled_only`), for a reader judged for sampled decoding alone."""
    from hamburger.engine.folding import parse_folding

    checkpoint, reader = Path(checkpoint), Path(reader)
    meta, theirs = read_meta(checkpoint), read_meta(reader)
    if parse_folding(fold).keep == "merged":
        raise HamburgerError(f"a fold reader reads a fold that keeps a token (first, last or none), not {fold!r}")
    lora = theirs.get("lora")
    if theirs["config"].get("lora_scope") != "after_fold" or not lora or lora.get("sets", 1) != 1:
        raise HamburgerError(f"{reader} is not a fold reader: it needs one set of LoRA adapters at lora_scope "
                             "after_fold (`hamburger train --set verify_fold=... --set lora_scope=after_fold`)")
    if theirs["base"]["fingerprint"] != meta["base"]["fingerprint"] or theirs.get("base_weights"):
        raise HamburgerError(f"{reader} was trained on another base than {checkpoint}'s")
    state = load_file(str(inside(reader, lora.get("file", LORA_FILE), "lora.file")))
    store = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    write_fold_reader(checkpoint, {k: v.to(store) for k, v in state.items()},
                      {**lora, "fold": fold, "sampled_only": sampled_only})
    return checkpoint


def read_fold_reader(checkpoint: str | Path) -> tuple[dict[str, torch.Tensor], dict] | None:
    """``checkpoint``'s fold reader (`add_fold_reader`) as (adapter state, settings), None when it has none."""
    reader = read_meta(checkpoint).get("fold_reader")
    if not reader:
        return None
    return load_file(str(inside(Path(checkpoint), reader.get("file", FOLD_READER_FILE), "fold_reader.file"))), reader


def write_fold_reader(checkpoint: str | Path, state: dict[str, torch.Tensor], reader: dict) -> None:
    """Write a fold reader's adapters ``state`` and settings ``reader`` into ``checkpoint`` (replacing any)."""
    checkpoint = Path(checkpoint)
    meta = read_meta(checkpoint)
    save_file({k: v.contiguous() for k, v in state.items()}, str(checkpoint / FOLD_READER_FILE),
              metadata={"format": FORMAT})
    meta["fold_reader"] = {**reader, "file": FOLD_READER_FILE}
    (checkpoint / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")


def graft(out: str | Path, base: str | None = None, config: HamburgerConfig | None = None
          ) -> tuple[HamburgerModel, Path, BaseInfo]:
    """Graft untrained HAMburger modules (``config``, default settings if None) onto a base model (a bundled
    name, HF folder or hub id; default: the bundled base) and save the checkpoint: (model, its folder, base)."""
    base_model, _, info = load_base(base, "float32")
    model = HamburgerModel(base_model, config or HamburgerConfig())
    return model, save_checkpoint(model, out, info), info


def export(model_dir: str | Path, out: str | Path, dtype: str = "bfloat16", drop_lora: bool = False,
           default_confidence: float | None = None, base: str | None = None, gate: str | None = None,
           prefilter: float | None = None, single_tail: int | None = None, fold_tail: int | None = None,
           micro_lookup: float | None = None, micro_lookup_continues: bool | None = None) -> Path:
    """Re-save a checkpoint with only what inference needs, weights stored in ``dtype`` (float32 | bfloat16);
    ``drop_lora`` leaves out its LoRA adapters (the grafted modules on the unchanged base); ``default_confidence``,
    ``gate`` (what the knob thresholds, `config.GATES`), ``prefilter``, ``single_tail`` and ``fold_tail`` (the slot
    layout of fed groups), ``micro_lookup`` and ``micro_lookup_continues`` replace the saved ones when given."""
    meta = read_meta(model_dir)
    model, tokenizer, info = load_checkpoint(model_dir, "float32", base=base)
    if drop_lora:
        from hamburger.core.lora import remove_lora

        if not remove_lora(model.base):
            raise HamburgerError(f"{model_dir} has no LoRA adapters to drop")
    extra = {k: v for k, v in meta.items()
             if k not in ("format", "config", "base", "base_weights", "lora", "fold_reader")}
    weights_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    if default_confidence is not None:
        model.config.default_confidence = default_confidence
    if gate is not None:
        model.config.gate = gate
    if prefilter is not None:
        model.config.prefilter = prefilter
    if single_tail is not None:
        model.config.single_tail = single_tail
    if fold_tail is not None:
        model.config.fold_tail = fold_tail
    if micro_lookup is not None:
        model.config.micro_lookup = micro_lookup
    if micro_lookup_continues is not None:
        model.config.micro_lookup_continues = micro_lookup_continues
    model.config.validate()
    out = save_checkpoint(model, out, info, tokenizer=tokenizer, save_base=bool(meta.get("base_weights")),
                          extra=extra, weights_dtype=weights_dtype)
    carried = read_fold_reader(model_dir)
    if carried:  # (carried as it is, in the export's dtype)
        state, reader = carried
        write_fold_reader(out, {k: v.to(weights_dtype) for k, v in state.items()}, reader)
    return out
