"""Typed training settings (`TrainConfig`), read from YAML/TOML files with ``key=value`` overrides.

Every field has a default; unknown keys and ill-typed or out-of-range values are errors that name
the valid keys. The config is saved in the run folder and checked again on ``--resume``.
"""

from __future__ import annotations

import json
import tomllib
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from hamburger.errors import HamburgerError
from hamburger.core.config import LORA_SCOPES, STOP_TARGETS
from hamburger.core.lora import DEFAULT_TARGETS
from hamburger.core.model import GRAFTED
from hamburger.core.modules import COMPILE_REGIONS
from hamburger.data.segment import SegmentSettings, segment_entropies
from hamburger.engine.folding import Folding, parse_folding
from hamburger.train.objective import MSD_CHAINS

BASE_MODES = ("frozen", "lora", "full")
STAGES = ("full", "msd")


@dataclass
class TrainConfig:
    """Settings of one training run (`hamburger train`). Sizes are in tokens, rows or optimizer steps."""

    # --- model
    base: str | None = None  # base model spec (bundled name, HF folder, hub id); None = bundled SmolLM2
    init: str | None = None  # start from this HAMburger checkpoint (its grafted sizes win) instead of grafting
    max_steps: int = 4  # graft: largest token group (ignored with init)
    decoder_layers: int = 2  # graft: micro-step decoder depth
    decoder_init: str = "copy_last"  # graft: "copy_last" (copy the base's last layers) or "random"
    grow_decoder: int = 0  # with init: deepen its micro-step decoder to this many layers (new ones start as identity)
    num_taps: int = 3  # graft: intermediate base layers tapped as features
    stop_sees_token: bool = True  # graft: the stop head also reads the chosen token's embedding
    base_mode: str = "lora"  # which base weights train: "frozen" (none), "lora" (adapters), "full" (all)
    freeze: list[str] = field(default_factory=list)  # grafted modules that stay exactly as they are (of "embedder",
    #                                                  "decoder", "stop_head"): no gradients, no optimizer state
    lora_r: int = 16  # LoRA rank (base_mode lora)
    lora_alpha: float = 32.0  # LoRA scale numerator: the update is (alpha / r) * B A
    lora_targets: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS))  # linear layer names
    lora_scope: str = "all"  # where the adapters apply: "all", "merged", "after_merge" (every slot from a row's
    #                          first merge on), "merged_and_after", "after_fold" (every slot from a row's first fold
    #                          on, with verify_fold); the scoped base stays exactly itself where nothing merged or
    #                          folded (see config.LORA_SCOPES)
    single_tail: int = 0  # the last single_tail tokens of every fed group take their own one-token slots, after one
    #                       merged slot of the rest (HamburgerConfig.single_tail; 0: one slot per group, the paper's)
    fold_tail: int = 0  # with single_tail: train the layout the engine's fold_tail d decodes (each split group fed
    #                     again whole, d groups later, in one merged slot that later slots read instead; 0: never)
    verify_window: int = 0  # train the layout verify mode's folding decodes in (`packing.window_folds`): every token
    #                         its own slot, predicted by the base, each data group of 2+ tokens folded into one merged
    #                         slot this many tokens after its end (0: off; trains the reading only: stop_loss_weight 0)
    verify_window_every: int = 0  # with verify_window: only every this-many-th step trains in that layout, the others
    #                               in the ordinary one (single_tail/fold_tail 0), so one set of adapters reads both;
    #                               the stop loss counts on the ordinary steps only (0: every step, as 1)
    verify_fold: str = ""  # train the layout verify_fold decodes a token-keeping fold in (the engine's --fold spec,
    #                        keep first, last or none, e.g. segments:60:0.45:first:steps=8:p=0.7): every token its own
    #                        slot, predicted by the base; each row re-cut from its stored entropies by the spec's p and
    #                        steps, and a group of 2+ tokens' leaving tokens hidden from every token fed from its fold
    #                        on. Only base weights read it: base_mode full, or LoRA with lora_scope all or
    #                        after_fold (the base exactly until a row's first fold; "": off)
    msd_context: int = 0  # the MSD also reads the base's final states at this many slots before its features
    #                       (HamburgerConfig.msd_context; 0: the paper's MSD, one slot's taps)
    stage: str = "full"  # "full": end to end; "msd": only decoder + stop head on unmerged base features
    msd_chains: str = "groups"  # the MSD is teacher-forced on the data's "groups"; stage msd: "all", a group of
    #                             max_steps tokens from every response token; stage full: "windows", the next max_steps
    #                             tokens after every slot, across group ends, as decoding runs the MSD after every
    #                             slot (both need stop_target accepted)
    msd_stride: int = 1  # msd_chains all: start a group at every msd_stride-th response token only (cheaper steps)
    # --- data
    data: str = ""  # training dataset (segment jsonl: prompt_ids, response_ids, groups)
    eval_data: str | None = None  # held-out dataset in the same format
    eval_max_rows: int = 0  # evaluate on at most this many rows (0 = all)
    recut: list[dict] = field(default_factory=list)  # segmentation settings ({strategy: sliding, sliding_p: 0.7},
    #   keys of segment.SegmentSettings but max_steps); epoch e re-cuts every row's stored entropies with entry
    #   e mod len(recut) instead of using its stored groups (empty = the stored groups every epoch)
    max_repeat: float = 1.0  # leave out the training rows whose responses repeat themselves more: a share of their
    #                          4-grams that occurred earlier in the response (rep4) above this (0.5 drops the loops;
    #                          1.0 keeps every row). Held-out rows are all kept
    out: str = "runs/train"  # run folder: metrics.jsonl, config.json, last/ (checkpoint + trainer state)
    # --- optimisation (AdamW)
    lr_grafted: float = 3e-4  # peak learning rate of the embedder, micro-step decoder and stop head
    lr_base: float = 5e-5  # peak learning rate of trainable base weights (LoRA adapters or the full base)
    min_lr: float = 1e-5  # cosine decay floor (a group whose peak is lower stays at its peak)
    weight_decay: float = 0.01  # on matrices only (not biases, norms, LoRA B stays decayed like A)
    warmup_steps: int = 20  # linear warm-up from 0
    grad_clip: float = 1.0  # global gradient-norm clip (0 = off)
    dtype: str = "fp32"  # "fp32" or "bf16" (autocast; master weights stay fp32)
    loss_chunk: int = 0  # response tokens per LM-head + loss chunk (0 = all at once); > 0 never holds whole
    #                      [tokens, vocab] logits: each chunk is recomputed in backward. Same losses up to rounding
    compile: bool = False  # torch.compile the base's decoder stack (dynamic shapes) for training and the KL teacher
    compile_backend: str = "inductor"  # torch.compile backend when compile is on ("aot_eager", "eager": checks)
    compile_region: str = "layer"  # with compile: "layer" (each decoder layer, its code made once for all) or
    # "stack" (the whole decoder stack as one graph: ~4x the warm-up on a CPU, experiments/2026-12-03-regional-compile)
    # --- batches
    batch_size: int = 16  # rows per optimizer step (global: the same for any number of processes)
    max_tokens: int = 0  # if > 0, batches hold up to this many padded base positions instead of batch_size rows
    grad_accum: int = 1  # micro-batches per process per step (splits each process's share to save memory)
    bucket_size: int = 64  # length bucketing: rows are sorted by length inside shuffled windows of this many batches
    epochs: float = 1.0  # passes over the data (fractions allowed)
    max_train_steps: int = 0  # if > 0, stop after this many optimizer steps (caps epochs)
    # --- loss
    kl_weight: float = 0.0  # weight of KL(unmerged base || model) per response token; 0 = off (no teacher pass)
    stop_loss_weight: float = 0.5  # weight of the stop head's binary cross-entropy
    token_loss_weight: float = 1.0  # weight of the cross-entropy on the data's tokens; 0 with kl_weight > 0 trains
    #                                 the tokens on the base's distribution only (pure KL, no sharpening to the data)
    kl_mix: float = 0.0  # share of reverse KL(model || base) in the KL term: (1 - kl_mix) x KL(base || model) +
    #                      kl_mix x KL(model || base). Forward KL covers the base's mass; reverse KL keeps the model's
    #                      mass off tokens the base finds unlikely, what a sampled token costs the base
    hidden_weight: float = 0.0  # weight of the hidden-state term: 1 - cos between the model's layer outputs and the
    #                            unmerged base's at each single slot that reads merged history (needs kl_weight > 0,
    #                            whose teacher pass gives the base's states; 0 = off)
    hidden_layers: list[int] = field(default_factory=list)  # base layers it compares (0-based; empty = every layer)
    stop_target: str = "group_end"  # stop-head label: "group_end" (data groups) or "accepted" (also stop
    #                                 before a token the micro-step decoder gets wrong; see config.STOP_TARGETS)
    # --- bookkeeping
    seed: int = 0  # model init, data order
    threads: int = 0  # torch CPU threads per process (0 = torch's choice)
    device: str = "auto"  # "auto" (cuda if present), "cpu" or "cuda"
    parallel: str = "ddp"  # multi-process wrapper: "ddp" or "fsdp" (see docs: untested on CPU)
    log_every: int = 10  # steps between metric lines
    eval_every: int = 0  # steps between evaluations (0 = only at the end)
    eval_on_start: bool = False  # also evaluate before the first step of a fresh run: the start point, same rows
    save_every: int = 100  # steps between checkpoints (0 = only at the end / on interrupt)
    progress: bool = True  # tqdm progress bar (rank 0)

    # Fields that may change on --resume: paths, logging and the schedule's length, and speed settings that change
    # results by rounding only (dtype: bf16 autocast keeps fp32 master weights and optimizer state).
    RESUMABLE = ("data", "eval_data", "eval_max_rows", "out", "threads", "log_every", "eval_every", "eval_on_start",
                 "save_every", "progress", "device", "epochs", "max_train_steps", "loss_chunk", "compile",
                 "compile_backend", "compile_region", "dtype")

    def validate(self) -> "TrainConfig":
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise HamburgerError(f"bad config value: {msg}")

        need(self.base_mode in BASE_MODES, f"base_mode must be one of {BASE_MODES}, got {self.base_mode!r}")
        need(self.stage in STAGES, f"stage must be one of {STAGES}, got {self.stage!r}")
        need(self.dtype in ("fp32", "bf16"), f"dtype must be 'fp32' or 'bf16', got {self.dtype!r}")
        need(self.device in ("auto", "cpu", "cuda"), f"device must be auto, cpu or cuda, got {self.device!r}")
        need(self.parallel in ("ddp", "fsdp"), f"parallel must be 'ddp' or 'fsdp', got {self.parallel!r}")
        need(self.decoder_init in ("copy_last", "random"), "decoder_init must be 'copy_last' or 'random'")
        for name in ("max_steps", "decoder_layers", "lora_r", "grad_accum", "bucket_size", "msd_stride"):
            need(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("num_taps", "max_tokens", "warmup_steps", "max_train_steps", "threads", "log_every",
                     "eval_every", "save_every", "eval_max_rows", "batch_size", "loss_chunk"):
            need(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
        need(self.batch_size > 0 or self.max_tokens > 0, "batch_size or max_tokens must be > 0")
        for name in ("lr_grafted", "lr_base", "min_lr", "weight_decay", "grad_clip", "kl_weight",
                     "stop_loss_weight", "token_loss_weight", "lora_alpha"):
            need(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
        need(self.token_loss_weight > 0 or self.kl_weight > 0,
             "token_loss_weight 0 needs kl_weight > 0 (something must teach the tokens)")
        need(0 <= self.kl_mix <= 1 and (self.kl_mix == 0 or self.kl_weight > 0),
             f"kl_mix must be in [0, 1] and needs kl_weight > 0, got {self.kl_mix}")
        need(self.epochs > 0, f"epochs must be > 0, got {self.epochs}")
        need(0 <= self.max_repeat <= 1, f"max_repeat must be in [0, 1], got {self.max_repeat}")
        need(0 <= self.single_tail < self.max_steps,
             f"single_tail must be in 0..max_steps - 1 ({self.max_steps - 1}), got {self.single_tail}")
        need(self.hidden_weight >= 0, f"hidden_weight must be >= 0, got {self.hidden_weight}")
        need(self.fold_tail >= 0 and (not self.fold_tail or (self.single_tail >= 1 and self.msd_context == 0
                                                              and self.hidden_weight == 0)),
             f"fold_tail must be >= 0 and needs single_tail >= 1, msd_context 0 and hidden_weight 0, "
             f"got {self.fold_tail}")
        mixed = self.verify_window_every > 1
        need(self.verify_window >= 0 and (not self.verify_window or (
            self.single_tail == 0 and self.fold_tail == 0 and self.msd_context == 0 and self.hidden_weight == 0
            and (self.stop_loss_weight == 0 or mixed) and self.stage == "full")),
             "verify_window must be >= 0 and needs single_tail 0, fold_tail 0, msd_context 0, hidden_weight 0, "
             f"stop_loss_weight 0 (every token is its own group: no stop targets; with verify_window_every > 1 the "
             f"other steps train the stop head) and stage full, got {self.verify_window}")
        need(self.verify_window_every >= 0 and (not self.verify_window_every or self.verify_window > 0),
             f"verify_window_every must be >= 0 and needs verify_window > 0, got {self.verify_window_every}")
        if self.verify_fold:
            try:
                folding = self.folding()
            except HamburgerError as e:
                need(False, f"verify_fold: {e}")
            need(folding.keep != "merged" and folding.groups == "segments" and folding.kv == 0 and folding.window >= 1
                 and not folding.offtop and not folding.bits and not self.verify_window and not self.recut
                 and self.single_tail == 0
                 and self.msd_context == 0 and self.hidden_weight == 0 and self.stop_loss_weight == 0
                 and self.stage == "full" and self.lora_scope in ("all", "after_fold"),
                 "verify_fold needs a segments fold that keeps a token (first, last or none; a merged fold is "
                 "verify_window's), a window >= 1, no kv budget, no offtop and no bits (decoding's); and verify_window "
                 "0, no recut, single_tail 0, msd_context 0, hidden_weight 0, stop_loss_weight 0, stage full and "
                 "lora_scope all or after_fold "
                 f"(nothing merges: the other scopes' adapters would never act), got {self.verify_fold!r}")
        need(self.lora_scope != "after_fold" or bool(self.verify_fold),
             "lora_scope after_fold trains the reading of verify_fold's token-keeping folds: set verify_fold (where "
             "slots merge, after_merge starts at the first merged one)")
        need(self.hidden_weight == 0 or (self.kl_weight > 0 and self.stage == "full"),
             "hidden_weight needs kl_weight > 0 and stage full (the KL teacher's pass gives the base's states)")
        need(bool(self.lora_targets), "lora_targets must name at least one layer")
        need(set(self.freeze) <= set(GRAFTED),
             f"freeze names grafted modules ({', '.join(GRAFTED)}), got {self.freeze}")
        trained = {"decoder", "stop_head"} | ({"embedder"} if self.stage == "full" else set())
        need(self.base_mode != "frozen" or bool(trained - set(self.freeze)),
             "nothing would train: freeze leaves no grafted module and base_mode is frozen")
        if self.compile:  # (torch._dynamo is imported only when compiling)
            from torch._dynamo import list_backends

            backends = list_backends(exclude_tags=())
            need(self.compile_backend in backends,
                 f"compile_backend must be a torch.compile backend ({', '.join(backends)}), "
                 f"got {self.compile_backend!r}")
        need(self.compile_region in COMPILE_REGIONS,
             f"compile_region must be one of {COMPILE_REGIONS}, got {self.compile_region!r}")
        need(self.lora_scope in LORA_SCOPES, f"lora_scope must be one of {LORA_SCOPES}, got {self.lora_scope!r}")
        need(self.lora_scope == "all" or self.base_mode == "lora" or (self.base_mode == "frozen" and bool(self.init)),
             f"lora_scope {self.lora_scope!r} needs adapters: base_mode lora, or frozen from an init that has them")
        need(self.stop_target in STOP_TARGETS, f"stop_target must be one of {STOP_TARGETS}, got {self.stop_target!r}")
        need(self.grow_decoder >= 0, f"grow_decoder must be >= 0, got {self.grow_decoder}")
        need(self.grow_decoder == 0 or bool(self.init), "grow_decoder deepens an init checkpoint's decoder: set init "
             "(a model grafted here gets decoder_layers directly)")
        need(self.msd_context >= 0, f"msd_context must be >= 0, got {self.msd_context}")
        need(self.msd_chains in MSD_CHAINS, f"msd_chains must be one of {MSD_CHAINS}, got {self.msd_chains!r}")
        need(self.msd_chains != "all" or self.stage == "msd", "msd_chains 'all' needs stage msd")
        need(self.msd_chains != "windows" or self.stage == "full", "msd_chains 'windows' needs stage full")
        need(self.msd_chains == "groups" or self.stop_target == "accepted",
             f"msd_chains {self.msd_chains!r} has no group ends to learn: use stop_target accepted")
        need(not self.recut or self.msd_chains != "all", "recut needs the data's groups (msd_chains all uses none)")
        for n, entry in enumerate(self.recut):
            try:
                segment_entropies([0.0], _segment_settings(entry, 1), 2)  # strategy and thresholds
            except HamburgerError as e:
                need(False, f"recut[{n}] {entry}: {e}")
        return self

    def recut_settings(self, max_steps: int) -> list[SegmentSettings]:
        """The `recut` entries as segmentation settings for groups of at most ``max_steps`` tokens; with
        `verify_fold`, its one cut (its own longest group)."""
        if self.verify_fold:
            return [self.folding().segments]
        return [_segment_settings(entry, max_steps) for entry in self.recut]

    def folding(self) -> Folding:
        """`verify_fold` parsed (`engine.folding.parse_folding`)."""
        return parse_folding(self.verify_fold)

    def fold_layout(self) -> tuple | None:
        """The folded layout's `packing.pack` settings (single_tail, fold, window, share, keep) of `verify_window` or
        `verify_fold`; None when neither is set."""
        if self.verify_window:
            return (0, 0, self.verify_window)
        if self.verify_fold:
            f = self.folding()
            return (0, 0, f.window, f.share, f.keep)
        return None

    def to_dict(self) -> dict:
        return asdict(self)

    def diff(self, other: "TrainConfig", ignore: tuple[str, ...] = ()) -> dict[str, tuple]:
        """Fields that differ (name -> (self, other)), except those in ``ignore``."""
        return {f.name: (getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
                if f.name not in ignore and getattr(self, f.name) != getattr(other, f.name)}

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_dict(cls, data: dict, where: str = "config") -> "TrainConfig":
        hints = typing.get_type_hints(cls)
        known = cls.field_names()
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise HamburgerError(f"{where}: unknown key(s) {unknown}; valid keys: {', '.join(known)}")
        values = {k: _coerce(k, v, hints[k], where) for k, v in data.items()}
        return cls(**values).validate()


RECUT_KEYS = tuple(f.name for f in fields(SegmentSettings) if f.name != "max_steps")


def _segment_settings(entry: dict, max_steps: int) -> SegmentSettings:
    """One `recut` entry (a mapping of RECUT_KEYS with a strategy; numbers for the thresholds) as settings."""
    unknown = sorted(set(entry) - set(RECUT_KEYS))
    if unknown or "strategy" not in entry:
        raise HamburgerError(f"needs a strategy and only the keys {', '.join(RECUT_KEYS)} (got {sorted(entry)})")
    numbers = {k: v for k, v in entry.items() if k != "strategy"}
    bad = [k for k, v in numbers.items() if isinstance(v, bool) or not isinstance(v, (int, float))]
    if bad or not all(v >= 0 for k, v in numbers.items() if k not in bad):
        raise HamburgerError(f"{', '.join(bad) or 'the thresholds'} must be numbers >= 0")
    return SegmentSettings(str(entry["strategy"]), max_steps, **{k: float(v) for k, v in numbers.items()})


def _coerce(name: str, value, hint, where: str):
    """Check one value against its field type (ints are accepted as floats)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if value is None:
            return None
        hint = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)) and all(isinstance(v, args[0]) for v in value):
            return list(value)
    elif hint is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    elif hint is float and isinstance(value, str) and _looks_float(value):
        return float(value)  # YAML 1.1 reads "1e-4" as a string
    elif hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    elif hint is bool and isinstance(value, bool):
        return value
    elif hint is str and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise HamburgerError(f"{where}: {name} must be {getattr(hint, '__name__', hint)}, got {value!r}")


def read_config_file(path: str | Path) -> dict:
    """A flat mapping from a .yaml/.yml/.toml/.json file (a top-level ``train:`` table is also accepted)."""
    path = Path(path)
    if not path.is_file():
        raise HamburgerError(f"config file {str(path)!r} does not exist")
    text = path.read_text()
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            raise HamburgerError(f"{path}: config files must end in .yaml, .yml, .toml or .json")
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise HamburgerError(f"cannot parse {path}: {e}") from e
    data = data or {}
    if not isinstance(data, dict):
        raise HamburgerError(f"{path}: expected a mapping of settings at the top level")
    if set(data) == {"train"} and isinstance(data["train"], dict):
        data = data["train"]
    return data


def parse_overrides(items: list[str]) -> dict:
    """``["key=value", ...]`` -> dict; values are parsed as YAML scalars/lists (``lr_base=1e-4``, ``x=[a,b]``)."""
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise HamburgerError(f"--set expects key=value, got {item!r}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        out[key.strip()] = value
    return out


def _looks_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return any(c.isdigit() for c in text)


def build_config(path: str | None, overrides: list[str], extra: dict | None = None,
                 saved: dict | None = None) -> TrainConfig:
    """A saved run config (on resume) < config file < ``--set`` overrides < explicit CLI options in ``extra``."""
    data = {**(saved or {}), **(read_config_file(path) if path else {})}
    where = str(path) if path else "settings"
    data = {**data, **parse_overrides(overrides or []), **{k: v for k, v in (extra or {}).items() if v is not None}}
    return TrainConfig.from_dict(data, where)
