"""Loading a HAMburger model for inference, and the process-wide runtime knobs (threads, device).

    from hamburger import load_model, generate, DecodingConfig
    model, tokenizer, info = load_model()                 # the bundled trained model, on the CPU
    model, tokenizer, info = load_model("CKPT", "bfloat16", device="auto")

Devices are named cpu, cuda or auto (cuda when present); `core.base.pick_device` turns a name into a
torch.device and refuses cuda without a GPU in one line.
"""

from __future__ import annotations

from pathlib import Path

from hamburger.errors import HamburgerError

DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[1] / "default_model"


def default_model() -> str:
    """The trained default checkpoint shipped with the package."""
    from hamburger.core.checkpoint import is_checkpoint

    if not is_checkpoint(DEFAULT_MODEL_DIR):
        raise HamburgerError("no trained default model is installed in this version; give --model DIR "
                             "(make one with `hamburger graft --out DIR`, then `hamburger train`)")
    return str(DEFAULT_MODEL_DIR)


def set_threads(n: int | None) -> None:
    """Torch's CPU threads for this process (None or 0: leave torch's choice)."""
    import torch

    if n:
        torch.set_num_threads(n)


def load_model(spec: str | None = None, dtype: str = "float32", base: str | None = None, reference: bool = False,
               device: str = "cpu", fold_reader: bool = False):
    """A HAMburger checkpoint folder (or the default model) -> (model, tokenizer, base info), ready for
    inference (LoRA adapters folded into the base weights, unless they act at merged slots only) on
    ``device`` (cpu, cuda or auto; checked before anything loads). With ``reference`` a 4th item: the
    unchanged base to compare against (see `checkpoint.load_reference`), on the same device, holding every weight it
    has in common with the model once (the model's base without its adapters where they stay apart from its weights;
    else `share_weights`, e.g. the layers merged adapters left alone). ``fold_reader``: the checkpoint's fold reader
    instead of its own adapters, where it has one (`checkpoint.load_checkpoint`)."""
    from hamburger.core.base import pick_device
    from hamburger.core.checkpoint import is_checkpoint, load_checkpoint, load_reference

    where = pick_device(device)
    path = spec or default_model()
    if not is_checkpoint(path):
        hint = " (it is a base model: run `hamburger graft --base ... --out DIR` first)" if Path(
            path, "config.json").is_file() else ""
        raise HamburgerError(f"{path!r} is not a HAMburger checkpoint{hint}")
    loaded = load_checkpoint(path, dtype, base=base, merge_adapters=True, fold_reader=fold_reader)
    loaded[0].to(where)
    if not reference:
        return loaded
    unchanged = load_reference(path, loaded[0], dtype, base)
    if unchanged is not loaded[0]:
        share_weights(unchanged, loaded[0])  # (before `.to`, which would copy each shared weight to the device)
    return (*loaded, unchanged.to(where))


def reads_with_fold_reader(spec: str | None, folding) -> bool:
    """Whether verify mode folding by ``folding`` (a `folding.Folding`) decodes the checkpoint ``spec`` (None: the
    default model) with its fold reader: it has one and the fold keeps a token (a merged fold is read by the
    checkpoint's own adapters) and drops the others (a fold's ``bits`` keeps them, read by the base alone)."""
    from hamburger.core.checkpoint import read_meta

    return (folding.keep != "merged" and not folding.bits
            and bool(read_meta(spec or default_model()).get("fold_reader")))


def fold_model(spec: str | None, folding, model, dtype: str = "float32", base: str | None = None):
    """The model verify mode folding by ``folding`` decodes with: the checkpoint ``spec``'s own ``model`` (as
    `load_model` gave it), or a second load of it with its fold reader (`reads_with_fold_reader`) on ``model``'s
    device, holding every weight the two have in common once (`share_weights`)."""
    if not reads_with_fold_reader(spec, folding):
        return model
    reader = load_model(spec, dtype, base, fold_reader=True)[0]  # (on the CPU: shared before `.to` copies anything)
    share_weights(reader, model)
    return reader.to(model.device)


def share_weights(model, source) -> int:
    """Point each parameter of ``model`` equal to ``source``'s of the same name (a LoRA layer's wrapped weight is
    named as the plain one) at ``source``'s tensor, so that two loads of one checkpoint with different adapters hold
    their base and grafted modules once; for inference only (training either would train both). ``model`` may be on
    another device: its shared parameters move to ``source``'s. Returns how many."""
    import torch

    def plain(name: str) -> str:
        return name.replace(".base_layer.", ".")

    theirs = {plain(name): p for name, p in source.named_parameters()}
    shared = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            q = theirs.get(plain(name))
            if (q is not None and q is not p and (q.shape, q.dtype) == (p.shape, p.dtype)
                    and torch.equal(p, q.to(p.device))):
                p.data = q.data
                shared += 1
    return shared
