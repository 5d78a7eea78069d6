"""A minimal LoRA (low-rank adapters) of our own for the linear layers of a base causal LM.

`add_lora` wraps chosen `nn.Linear` modules in `LoraLinear`: y = W x + (alpha / r) * B A x, with A
random and B zero, so an untouched adapter changes nothing. The wrapped layer keeps its weights
under ``base_layer``. Adapters can be switched off in place (`adapters_disabled`), which gives the
unadapted base model (the KL teacher) without a second copy of the weights, or merged into W.
`adapters_gated` scales every adapter's update per position (gate 0 = the base exactly, gate 1 = the
adapter): HAMburger uses it to adapt the base at merged slots only (`lora_scope: merged`). A layer may hold
several adapter sets (`sets`), each gated on its own, so that different kinds of slot get different adapters
(`lora_scope: merged_and_after`); set 0 keeps the names ``lora_A`` / ``lora_B``, set i ``lora_A_i`` / ``lora_B_i``.
"""

from __future__ import annotations

import copy
import math
import weakref
from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn

from hamburger.errors import HamburgerError

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                   "qkv_proj", "gate_up_proj")  # (the last two: Phi-3's fused projections)
LORA_KEYS = ("lora_A", "lora_B")


def set_keys(i: int) -> tuple[str, str]:
    """Parameter names of adapter set ``i`` of a `LoraLinear`."""
    return LORA_KEYS if i == 0 else (f"lora_A_{i}", f"lora_B_{i}")


def is_adapter_weight(name: str) -> bool:
    """Whether a parameter name (``a.b.lora_A``, ``...lora_B_1``) is an adapter weight."""
    return name.rsplit(".", 1)[-1].startswith(("lora_A", "lora_B"))


class LoraLinear(nn.Module):
    """An `nn.Linear` plus ``sets`` rank-r updates scaled by alpha / r (no dropout)."""

    def __init__(self, base_layer: nn.Linear, r: int, alpha: float, sets: int = 1):
        super().__init__()
        if r < 1:
            raise HamburgerError(f"LoRA rank must be >= 1, got {r}")
        self.base_layer = base_layer
        self.r, self.alpha, self.scaling = r, alpha, alpha / r
        self.sets = 0
        for _ in range(sets):
            self.add_set()
        self.enabled = True
        # per-position scale of each set's update, [..., 1] or [..., sets]; set by `adapters_gated`
        self.gate: torch.Tensor | None = None

    def add_set(self) -> None:
        """One more adapter set: A random, B zero, so the layer computes what it did before."""
        w = self.base_layer.weight
        a, b = set_keys(self.sets)
        setattr(self, a, nn.Parameter(torch.empty(self.r, self.in_features, dtype=w.dtype, device=w.device)))
        setattr(self, b, nn.Parameter(torch.zeros(self.out_features, self.r, dtype=w.dtype, device=w.device)))
        nn.init.kaiming_uniform_(getattr(self, a), a=math.sqrt(5))
        self.sets += 1

    def adapter_keys(self) -> list[str]:
        return [key for i in range(self.sets) for key in set_keys(i)]

    @property
    def weight(self) -> torch.Tensor:  # code that inspects `.weight` (dtype, device) keeps working
        return self.base_layer.weight

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base_layer.bias

    @property
    def in_features(self) -> int:
        return self.base_layer.in_features

    @property
    def out_features(self) -> int:
        return self.base_layer.out_features

    def delta_weight(self) -> torch.Tensor:
        if self.sets != 1:
            raise HamburgerError(f"{self.sets} adapter sets act on different slots: they cannot be folded into W")
        return (self.lora_B @ self.lora_A) * self.scaling

    def merged_weight(self) -> torch.Tensor:
        """W + (alpha / r) B A of a one-set layer, no grad: what the layer computes where its adapters act everywhere,
        as one weight. Built on first use and kept (one more copy of W) until W, A or B change, in place or by
        replacement."""
        own = self._parameters  # (read from the modules' own dicts, as `lean._linear` does: a check per forward)
        w, a, b = self._modules["base_layer"]._parameters["weight"], own["lora_A"], own["lora_B"]
        key = (w.data_ptr(), w._version, a.data_ptr(), a._version, b.data_ptr(), b._version)
        kept = self.__dict__.get("_merged")
        if kept is None or kept[0] != key:
            with torch.no_grad():
                kept = key, w + self.delta_weight().to(w.dtype)
            self.__dict__["_merged"] = kept
        return kept[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base_layer(x)
        if not self.enabled:
            return y
        for i in range(self.sets):
            a, b = (getattr(self, key).to(x.dtype) for key in set_keys(i))
            delta = nn.functional.linear(nn.functional.linear(x, a), b) * self.scaling
            if self.gate is not None:  # 0 * finite = 0 exactly: gated-off positions are the base's own
                delta = delta * self.gate[..., i:i + 1].to(delta.dtype)
            y = y + delta
        return y

    def extra_repr(self) -> str:
        return f"r={self.r}, alpha={self.alpha}" + (f", sets={self.sets}" if self.sets > 1 else "")


def lora_modules(model: nn.Module) -> Iterator[tuple[str, LoraLinear]]:
    for name, module in model.named_modules():
        if isinstance(module, LoraLinear):
            yield name, module


# The LoRA layers of each model the switches below were used on, as of `_wrapping` (bumped whenever `add_lora` or
# `_unwrap` wraps or unwraps a layer): a decode switches adapters at every base forward, where walking every module
# of the model each time showed in a CPU step's profile.
_layers_of: "weakref.WeakKeyDictionary[nn.Module, tuple[int, list[LoraLinear]]]" = weakref.WeakKeyDictionary()
_wrapping = 0


def lora_layers(model: nn.Module) -> list[LoraLinear]:
    """The `LoraLinear` layers of ``model`` (remembered until a layer is wrapped or unwrapped anywhere)."""
    known = _layers_of.get(model)
    if known is None or known[0] != _wrapping:
        known = _wrapping, [m for _, m in lora_modules(model)]
        _layers_of[model] = known
    return known[1]


def _set_each(modules: list[LoraLinear], name: str, values) -> None:
    """``module.name = value`` for plain (non-tensor-registered) attributes, past `nn.Module.__setattr__`'s checks
    (``enabled`` and ``gate`` are never parameters, buffers or modules)."""
    for m, v in zip(modules, values):
        m.__dict__[name] = v


def has_lora(model: nn.Module) -> bool:
    return any(True for _ in lora_modules(model))


def add_lora(base_model: nn.Module, targets: tuple[str, ...] | list[str] = DEFAULT_TARGETS, r: int = 16,
             alpha: float = 32.0, sets: int = 1) -> list[str]:
    """Wrap every `nn.Linear` whose attribute name is in ``targets`` (``sets`` adapter sets each); return the
    wrapped module names.

    Only the new adapter parameters are created; which parameters train is the caller's choice.
    """
    if has_lora(base_model):
        raise HamburgerError("the model already has LoRA adapters")
    found: list[tuple[nn.Module, str, str]] = []
    for name, module in base_model.named_modules():
        for child_name, child in module.named_children():
            if child_name in targets and isinstance(child, nn.Linear):
                found.append((module, child_name, f"{name}.{child_name}" if name else child_name))
    if not found:
        raise HamburgerError(f"no linear layer named any of {list(targets)} in {type(base_model).__name__}")
    global _wrapping
    _wrapping += 1
    for parent, child_name, _ in found:
        setattr(parent, child_name, LoraLinear(getattr(parent, child_name), r, alpha, sets))
    return [full for _, _, full in found]


def adapter_sets(model: nn.Module) -> int:
    """How many adapter sets the model's LoRA layers hold (0 without LoRA); an error if they differ."""
    sets = {m.sets for _, m in lora_modules(model)}
    if len(sets) > 1:
        raise HamburgerError(f"LoRA layers with different numbers of adapter sets: {sorted(sets)}")
    return sets.pop() if sets else 0


def add_adapter_sets(model: nn.Module, sets: int) -> None:
    """Give every LoRA layer ``sets`` adapter sets; the new ones start at zero (the model is unchanged)."""
    for _, module in lora_modules(model):
        while module.sets < sets:
            module.add_set()


def lora_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter weights only, keyed by the wrapped module's name + ``.lora_A`` / ``.lora_B`` (+ ``_i``)."""
    return {f"{name}.{key}": getattr(module, key).detach() for name, module in lora_modules(model)
            for key in module.adapter_keys()}


def load_lora_state_dict(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Copy adapter weights into a model that has the same adapters; every key must match."""
    own = dict(lora_modules(model))
    expected = {f"{name}.{key}" for name, module in own.items() for key in module.adapter_keys()}
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        raise HamburgerError(f"LoRA weights do not fit the model: missing {missing[:3]}, unexpected {unexpected[:3]}")
    with torch.no_grad():
        for full, tensor in state.items():
            name, key = full.rsplit(".", 1)
            param = getattr(own[name], key)
            if param.shape != tensor.shape:
                raise HamburgerError(f"LoRA weight {full}: shape {tuple(tensor.shape)} != {tuple(param.shape)}")
            param.copy_(tensor.to(param.dtype))


def merge_lora(model: nn.Module) -> list[str]:
    """Fold every adapter into its linear weight (W += scale * B A) and unwrap it; return the names."""
    return _unwrap(model, merge=True)


def remove_lora(model: nn.Module) -> list[str]:
    """Unwrap every adapter without folding it in: the base is exactly what it was before `add_lora`."""
    return _unwrap(model, merge=False)


def _unwrap(model: nn.Module, merge: bool) -> list[str]:
    global _wrapping
    _wrapping += 1
    names = []
    for name, module in list(lora_modules(model)):
        if merge:
            with torch.no_grad():
                module.base_layer.weight += module.delta_weight().to(module.base_layer.weight.dtype)
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        setattr(parent, name.rsplit(".", 1)[-1], module.base_layer)
        names.append(name)
    return names


def without_adapters(model: nn.Module) -> nn.Module:
    """A module tree of its own that computes ``model`` with every LoRA adapter off, holding no weight of its own: each
    module a shallow copy of ``model``'s (its parameters, buffers and other attributes the very same objects), each
    `LoraLinear` its wrapped layer, and no hooks (those on ``model`` belong to whoever put them there). For inference
    only: training either would train both."""
    copies: dict[int, nn.Module] = {}

    def copied(module: nn.Module) -> nn.Module:
        if isinstance(module, LoraLinear):
            module = module.base_layer
        if id(module) not in copies:
            out = copy.copy(module)
            copies[id(module)] = out
            for name, value in vars(module).items():
                if "hooks" in name and isinstance(value, dict):
                    setattr(out, name, type(value)())
            out._parameters, out._buffers = dict(module._parameters), dict(module._buffers)
            out._non_persistent_buffers_set = set(module._non_persistent_buffers_set)
            out._modules = {name: None if child is None else copied(child) for name, child in module._modules.items()}
        return copies[id(module)]

    return copied(model)


@contextmanager
def adapters_disabled(model: nn.Module):
    """Within the block, every LoRA adapter of ``model`` is off: the model is its unadapted base."""
    modules = lora_layers(model)
    states = [m.enabled for m in modules]
    _set_each(modules, "enabled", [False] * len(modules))
    try:
        yield model
    finally:
        _set_each(modules, "enabled", states)


@contextmanager
def adapters_gated(model: nn.Module, gate: torch.Tensor):
    """Within the block, every adapter's update at position (b, s) is scaled by ``gate[b, s]`` (a [B, S]
    tensor of 0/1 or any weights; [B, S, sets]: set i by ``gate[b, s, i]``). Where the gate is 0 the output is
    exactly the unadapted base's."""
    modules = lora_layers(model)
    g = gate[..., None] if gate.ndim == 2 else gate
    _set_each(modules, "gate", [g] * len(modules))
    try:
        yield model
    finally:
        _set_each(modules, "gate", [None] * len(modules))
