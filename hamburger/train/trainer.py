"""`hamburger train`: teacher-forced training of a HAMburger model on segmented data (docs/method.md).

One loop for every variant: ``base_mode`` (frozen | lora | full) only decides which base weights
are trainable (lora adds adapters); ``stage: msd`` trains the micro-step decoder and stop head alone
on unmerged base features. Runs single-process or under torchrun / accelerate launch (DDP: every
process takes a disjoint share of each step batch, whose size does not depend on the number of
processes; only rank 0 writes). RUN_DIR/last is a HAMburger checkpoint (``hamburger generate
--model RUN_DIR/last`` works) plus ``trainer_state.pt`` (optimizer, RNG and data position, tensors
and plain containers only, read with ``weights_only=True``): ``--resume`` continues exactly as if
never stopped. Ctrl-C / SIGTERM save a checkpoint before exiting.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import json
import random
import shutil
import signal
import sys
import time
from pathlib import Path

import torch

from hamburger.core.base import BaseInfo, load_base, weights_fingerprint
from hamburger.core.checkpoint import (is_checkpoint, load_checkpoint, read_fold_reader, read_meta, save_checkpoint,
                                       write_fold_reader)
from hamburger.core.config import LORA_SETS, HamburgerConfig
from hamburger.errors import HamburgerError
from hamburger.core.lora import add_adapter_sets, add_lora, adapter_sets, has_lora, is_adapter_weight, merge_lora
from hamburger.core.model import GRAFTED, HamburgerModel
from hamburger.core.packing import PackedBatch, TrainBatch
from hamburger.core.modules import base_decoder_stack
from hamburger.eval.plausibility import repeated_ngram_mask
from hamburger.train.config import TrainConfig
from hamburger.train.batching import (Row, collate, load_rows, make_plan, padding_fraction, shard,
                                     unrepetitive)
from hamburger.train.dist import gathered, grad_sync, init_dist, is_fsdp, load_optimizer_state, optimizer_state, wrap
from hamburger.train.objective import Objective, batch_stats, empty_stats, lr_at, summarize

STATE_FILE = "trainer_state.pt"


def fresh_mask(rows: list[Row], out) -> torch.Tensor | None:
    """True for each prediction of ``out`` whose target is fresh (`repeated_ngram_mask` False), where its targets are
    the rows' response tokens in order (one prediction per token); None where they are not (e.g. `msd_chains: all`)."""
    tokens = [t for r in rows for t in r.response_ids]
    if out.targets.numel() != len(tokens) or out.targets.tolist() != tokens:
        return None
    return torch.tensor([not rep for r in rows for rep in repeated_ngram_mask(r.response_ids)],
                        device=out.targets.device)


class Trainer:
    """Builds the model, optimizer and data plan from a `TrainConfig`; `train()` runs the loop."""

    def __init__(self, cfg: TrainConfig, resume: bool = False):
        self.cfg, self.run = cfg, Path(cfg.out)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.dist = init_dist(cfg.device)
        last = self.run / "last"
        if resume and not last.exists() and self.dist.main:
            print(f"hamburger train: nothing to resume in {self.run}; starting a new run", file=sys.stderr)
        self.state = self._read_state(last) if resume and last.exists() else None
        if not resume and last.exists():
            raise HamburgerError(f"{last} exists: pass --resume to continue that run, or choose another --out")
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.model, self.tokenizer, self.info = self._load_model(last if self.state else None)
        self.fold_reader = self._fold_reader(last if self.state else cfg.init)
        self.model.config.kl_weight, self.model.config.stop_loss_weight = cfg.kl_weight, cfg.stop_loss_weight
        self.model.config.token_loss_weight, self.model.config.kl_mix = cfg.token_loss_weight, cfg.kl_mix
        self.model.config.stop_target, self.model.config.lora_scope = cfg.stop_target, cfg.lora_scope
        self.model.config.single_tail, self.model.config.msd_context = cfg.single_tail, cfg.msd_context
        self.model.config.fold_tail = cfg.fold_tail
        # the layouts' settings (`packing.pack`): the ordinary one and verify-fold's, which steps train in (`layout_at`)
        self.ordinary, self.window = (cfg.single_tail, cfg.fold_tail, 0), cfg.fold_layout()
        self.layouts = ([self.ordinary] if not self.window else [self.window] if cfg.verify_window_every <= 1
                        else [self.ordinary, self.window])
        self.model.config.validate()
        self.model.loss_chunk = cfg.loss_chunk
        self.model.match_hidden(cfg.hidden_weight, cfg.hidden_layers)
        self.model.to(self.dist.device)
        if cfg.compile:
            self.model.compile_training(cfg.compile_backend, cfg.compile_region)
        self._set_trainable()
        teacher_base = self._teacher_base()
        if cfg.dtype == "bf16" and not (cfg.parallel == "fsdp" and self.dist.active):  # (FSDP: one dtype per unit)
            for module in (self.model.base, teacher_base):
                if module is not None:
                    frozen_linears_to(module, torch.bfloat16)
        self.objective = Objective(self.model, cfg.stage, teacher_base, cfg.msd_chains, cfg.msd_stride)
        layers = list(base_decoder_stack(self.model.base).layers) + list(self.model.decoder.layers)
        self.net = wrap(self.objective, layers, self.dist, cfg.parallel)
        self.adamw = adamw_options(self.dist.device, cfg.parallel == "fsdp" and self.dist.active)
        self.optimizer = torch.optim.AdamW(self._param_groups(), lr=cfg.lr_grafted, weight_decay=cfg.weight_decay,
                                           **self.adamw)
        vocab = self.model.base.get_input_embeddings().num_embeddings
        k = self.model.config.max_steps
        self.rows, _ = load_rows(cfg.data, self.tokenizer, k, vocab, cfg.recut_settings(k))
        if cfg.max_repeat < 1:
            kept = unrepetitive(self.rows, cfg.max_repeat)
            if not kept:
                raise HamburgerError(f"max_repeat {cfg.max_repeat} leaves none of the {len(self.rows)} rows of "
                                     f"{cfg.data}")
            if self.dist.main:
                print(f"hamburger train: max_repeat {cfg.max_repeat}: training on {len(kept)} of {len(self.rows)} "
                      "rows", file=sys.stderr)
            self.rows = kept
        fold_cut = cfg.recut_settings(k) if cfg.verify_fold else ()  # (held-out rows cut as the training rows are)
        self.eval_rows = [r.at_epoch(0) for r in load_rows(cfg.eval_data, self.tokenizer, k, vocab, fold_cut)[0]
                          ] if cfg.eval_data else []
        if cfg.eval_max_rows:
            self.eval_rows = self.eval_rows[:cfg.eval_max_rows]
        # the rows' lengths (merged base positions) under each cut an epoch can use: the stored groups, or each recut
        # (with two layouts, the longer: a step's batch fits whichever layout it trains in)
        self.cut_lengths = [[max(r.at_epoch(c).slots(*layout) for layout in self.layouts) for r in self.rows]
                            for c in range(max(1, len(cfg.recut)))]
        self.plan = make_plan(self.lengths, cfg.batch_size, cfg.max_tokens, cfg.bucket_size, cfg.seed, cfg.epochs,
                              cfg.max_train_steps)
        self.step = 0
        if self.state:
            self._restore(self.state)
        self.stop_signal = 0

    # ------------------------------------------------------------------------------------ setup
    def _load_model(self, last: Path | None):
        cfg = self.cfg
        if last is not None:
            return self._load_checkpoint(last, None)
        if cfg.init:
            if not is_checkpoint(cfg.init):
                raise HamburgerError(f"init {cfg.init!r} is not a HAMburger checkpoint")
            model, tokenizer, info = self._load_checkpoint(cfg.init, cfg.base)
            if cfg.grow_decoder:
                model.grow_decoder(cfg.grow_decoder)
        else:
            base, tokenizer, info = load_base(cfg.base, "float32")
            hcfg = HamburgerConfig(max_steps=cfg.max_steps, decoder_layers=cfg.decoder_layers,
                                   decoder_init=cfg.decoder_init, num_taps=cfg.num_taps,
                                   stop_sees_token=cfg.stop_sees_token)
            model = HamburgerModel(base, hcfg)
        if has_lora(model.base) and cfg.base_mode == "full":
            merge_lora(model.base)  # the adapters become part of the fully trained base
        # (base_mode frozen keeps an init checkpoint's adapters as they are, and saves them with the run)
        sets = LORA_SETS.get(cfg.lora_scope, 1)
        if cfg.base_mode == "lora" and not has_lora(model.base):
            add_lora(model.base, tuple(cfg.lora_targets), cfg.lora_r, cfg.lora_alpha, sets)
        elif cfg.base_mode == "lora":
            if adapter_sets(model.base) > sets:
                raise HamburgerError(f"the init checkpoint has {adapter_sets(model.base)} adapter sets; lora_scope "
                                     f"{cfg.lora_scope!r} uses {sets}")
            add_adapter_sets(model.base, sets)  # e.g. a "merged" model continued as "merged_and_after": new set at 0
        return model, tokenizer, info

    def _fold_reader(self, source: str | Path | None) -> tuple[dict, dict] | None:
        """The fold reader of the checkpoint the run starts from, which every checkpoint of the run carries: it
        reads folds with the unchanged base, so it stays valid while the base's own weights do not train."""
        carried = read_fold_reader(source) if source else None
        if carried and self.cfg.base_mode == "full":
            if self.dist.main:
                print(f"hamburger train: {source}'s fold reader is left out: base_mode full trains the base it reads "
                      "with", file=sys.stderr)
            return None
        return carried

    @staticmethod
    def _load_checkpoint(path, base):
        """load_checkpoint, keeping the reference to the *original* base when the checkpoint holds a trained one."""
        model, tokenizer, info = load_checkpoint(path, base=base)
        meta = read_meta(path)
        if meta.get("base_weights"):
            info = BaseInfo(meta["base"]["spec"], meta["base"]["spec"], meta["base"]["fingerprint"])
        return model, tokenizer, info

    def _teacher_base(self):
        """A frozen copy of the original base for the KL term, needed only when the base itself trains."""
        if self.cfg.kl_weight <= 0 or self.cfg.base_mode != "full":
            return None
        base = load_base(self.info.spec, "float32")[0]
        if weights_fingerprint(base) != self.info.fingerprint:
            raise HamburgerError(f"the KL teacher {self.info.spec!r} is not the base this model was made from")
        return base.to(self.dist.device).requires_grad_(False)

    def _set_trainable(self) -> None:
        """requires_grad: the grafted modules (decoder + stop head only in stage msd) less those in `freeze`, and,
        by base_mode, nothing, the LoRA adapters or the whole base."""
        cfg, model = self.cfg, self.model
        if cfg.stage == "msd" and cfg.base_mode != "frozen":
            raise HamburgerError("stage msd trains only the micro-step decoder and stop head: use base_mode frozen")
        model.requires_grad_(False)
        for name in ("decoder", "stop_head") + (("embedder",) if cfg.stage == "full" else ()):
            getattr(model, name).requires_grad_(name not in cfg.freeze)
        if cfg.base_mode == "full":
            model.base.requires_grad_(True)
        elif cfg.base_mode == "lora":
            for name, p in model.base.named_parameters():
                p.requires_grad_(is_adapter_weight(name))

    def _param_groups(self) -> list[dict]:
        """Grafted modules at lr_grafted, trainable base weights at lr_base; decay on matrices only.
        Built after wrapping, since FSDP replaces the parameters by sharded ones."""
        cfg, groups = self.cfg, []
        named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        for kind, lr in (("grafted", cfg.lr_grafted), ("base", cfg.lr_base)):
            ps = [p for n, p in named if n.startswith(tuple(f"{g}." for g in GRAFTED)) == (kind == "grafted")]
            groups += [{"params": [p for p in ps if p.ndim >= 2], "weight_decay": cfg.weight_decay, "kind": kind,
                        "peak": lr},
                       {"params": [p for p in ps if p.ndim < 2], "weight_decay": 0.0, "kind": kind, "peak": lr}]
        self.trainable = [p for _, p in named]
        return [g for g in groups if g["params"]]

    def _autocast(self):
        return torch.autocast(self.dist.device.type, dtype=torch.bfloat16, enabled=self.cfg.dtype == "bf16")

    def teacher(self, batch: TrainBatch | PackedBatch) -> torch.Tensor | None:
        return self.objective.teacher(batch)

    def lengths(self, epoch: int) -> list[int]:
        """The rows' merged lengths in epoch ``epoch`` (with `recut`, under that epoch's cut)."""
        return self.cut_lengths[epoch % len(self.cut_lengths)]

    def layout_at(self, step: int) -> tuple[int, int, int]:
        """The layout step ``step`` (0-based) trains in: with two, verify-fold's on every verify_window_every-th."""
        if len(self.layouts) == 1:
            return self.layouts[0]
        return self.window if (step + 1) % self.cfg.verify_window_every == 0 else self.ordinary

    def step_rows(self, step: int) -> list[Row]:
        """The rows (with the groups they train on) of the plan's step ``step``."""
        epoch, _, rows = self.plan.steps[step]
        return [self.rows[i].at_epoch(epoch) for i in rows]

    # ------------------------------------------------------------------------------------ loop
    def train_step(self, rows: list[int], epoch: int = 0) -> torch.Tensor:
        """One optimizer step on a step batch of epoch ``epoch``, in the layout of this step (`layout_at`); returns the
        summed stats of this process's share."""
        cfg, k, layout = self.cfg, self.model.config.max_steps, self.layout_at(self.step)
        # verify-fold's layout has one-token groups only: no stop targets to learn from
        self.model.config.stop_loss_weight = 0.0 if layout[2] else cfg.stop_loss_weight
        lengths = (self.lengths(epoch) if len(self.layouts) == 1  # (two layouts: cut the step by its own layout)
                   else {i: self.rows[i].at_epoch(epoch).slots(*layout) for i in rows})
        micro = shard(rows, lengths, self.dist.world, self.dist.rank, cfg.grad_accum)
        total = sum(len(self.rows[i].response_ids) for i in rows)
        stats = empty_stats(k, self.dist.device)
        self.net.train()
        for j, part in enumerate(micro):
            batch_rows = [self.rows[i].at_epoch(epoch) for i in part or rows[:1]]  # an empty share still joins in
            weight = sum(len(r.response_ids) for r in batch_rows) / total * self.dist.world if part else 0.0
            with grad_sync(self.net, j == len(micro) - 1):
                with self._autocast():
                    out = self.net(collate(batch_rows, k, self.dist.device, *layout))
                (out.loss * weight).backward()
            if part:
                stats += batch_stats(out, k, *padding_fraction([batch_rows], *layout),
                                     sum(len(r.response_ids) for r in batch_rows))
        self.model.config.stop_loss_weight = cfg.stop_loss_weight  # (what a checkpoint records)
        for group in self.optimizer.param_groups:
            group["lr"] = lr_at(self.step, len(self.plan.steps), group["peak"], cfg.min_lr, cfg.warmup_steps)
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.trainable, cfg.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return stats

    def train(self, on_step=None) -> int:
        """Run until the plan ends or a signal arrives; return an exit code (0, or 128 + signal)."""
        cfg, main, total = self.cfg, self.dist.main, len(self.plan.steps)
        try:
            handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        except ValueError:  # not the main thread: no signal handling
            handlers = {}
        if main:
            self.run.mkdir(parents=True, exist_ok=True)
            (self.run / "config.json").write_text(json.dumps(self.cfg.to_dict(), indent=1) + "\n")
            self.log({"kind": "start", "step": self.step, "steps": total, "rows": len(self.rows),
                      "world": self.dist.world, "trainable_params": sum(p.numel() for p in self.trainable),
                      "base_mode": cfg.base_mode, "stage": cfg.stage,
                      "adamw": next(iter(self.adamw), "default"), "device": str(self.dist.device)})
        if cfg.eval_on_start and self.eval_rows and self.step == 0:
            self.log({"kind": "eval", "step": 0, **self.evaluate()})
        bar = None
        if main and cfg.progress:
            from tqdm import tqdm
            bar = tqdm(total=total, initial=self.step, desc="train", dynamic_ncols=True, file=sys.stderr)
            if cfg.compile:  # (the first steps of each shape class and grad mode compile: minutes on a big stack)
                bar.set_postfix_str("compiling the base")
        window, t0 = None, time.perf_counter()
        try:
            while self.step < total:
                epoch, index, rows = self.plan.steps[self.step]
                stats = self.train_step(rows, epoch)
                window = stats if window is None else window + stats
                if self.step % max(cfg.log_every, 1) == 0 or self.step == total:
                    m = summarize(self.dist.all_sum(window), self.model.config.max_steps, cfg.kl_weight,
                                  cfg.stop_loss_weight, cfg.hidden_weight, cfg.token_loss_weight)
                    dt = time.perf_counter() - t0
                    m.update(kind="train", step=self.step, epoch=epoch, tok_s=m["response_tokens"] / dt,
                             lr={g["kind"]: g["lr"] for g in self.optimizer.param_groups})
                    if self.dist.device.type == "cuda":  # peak so far, this process
                        m["max_mem_gib"] = round(torch.cuda.max_memory_allocated(self.dist.device) / 2**30, 2)
                    self.log(m)
                    if bar is not None:
                        bar.set_postfix(loss=f"{m['loss']:.3f}", acc=f"{m['token_acc']:.3f}",
                                        tok_s=f"{m['tok_s']:.0f}")
                    window, t0 = None, time.perf_counter()
                if bar is not None:
                    bar.update(1)
                paused = time.perf_counter()  # evaluation and saving do not count against tok/s
                if cfg.eval_every and self.eval_rows and self.step % cfg.eval_every == 0 and self.step < total:
                    self.log({"kind": "eval", "step": self.step, **self.evaluate()})
                if on_step is not None:
                    on_step(self)
                stop = int(self.dist.all_max(torch.tensor([self.stop_signal]))[0])
                if stop or (cfg.save_every and self.step % cfg.save_every == 0) or self.step == total:
                    self.save()
                t0 += time.perf_counter() - paused
                if stop:
                    if main:
                        print(f"\nhamburger train: stopped by signal {stop} at step {self.step}/{total}; "
                              f"checkpoint in {self.run / 'last'}; continue with --resume", file=sys.stderr)
                    return 128 + stop
            if self.eval_rows:
                self.log({"kind": "eval", "step": self.step, **self.evaluate()})
            self.log({"kind": "end", "step": self.step, "replica_max_diff": self.replica_diff()})
            return 0
        finally:
            if bar is not None:
                bar.close()
            for s, h in handlers.items():
                signal.signal(s, h)

    def _on_signal(self, signum, frame):
        if self.stop_signal == signal.SIGINT and signum == signal.SIGINT:  # a second Ctrl-C stops at once
            raise KeyboardInterrupt
        self.stop_signal = signum

    def evaluate(self) -> dict:
        """Loss, token accuracy per micro position (also on fresh tokens alone, `token_acc_micro_fresh`: those that
        repeat no earlier 4-gram of their answer) and stop accuracy on the held-out rows (sharded), in the run's first
        layout; with two, verify-fold's under "window"."""
        out = self.evaluate_layout(self.layouts[0])
        if len(self.layouts) > 1:
            out["window"] = self.evaluate_layout(self.layouts[1])
        return out

    @torch.no_grad()
    def evaluate_layout(self, layout: tuple[int, int, int]) -> dict:
        cfg, k = self.cfg, self.model.config.max_steps
        order = sorted(range(len(self.eval_rows)), key=lambda i: self.eval_rows[i].slots(*layout))
        size = cfg.batch_size or max(1, cfg.max_tokens // max(r.slots(*layout) for r in self.eval_rows))
        size = max(1, size // max(1, cfg.grad_accum))
        batches = [order[i:i + size] for i in range(0, len(order), size)]
        count = -(-len(batches) // self.dist.world)  # FSDP: every process runs as many forwards
        mine = batches[self.dist.rank::self.dist.world]
        self.objective.eval()  # under FSDP this is the sharded module itself; under DDP the unwrapped one
        stats = empty_stats(k, self.dist.device)
        for n in range(count):
            rows: list[Row] = [self.eval_rows[i] for i in (mine[n] if n < len(mine) else batches[0])]
            with self._autocast():
                out = self.objective(collate(rows, k, self.dist.device, *layout))
            if n < len(mine):
                stats += batch_stats(out, k, *padding_fraction([rows], *layout), fresh=fresh_mask(rows, out))
        stop_weight = 0.0 if layout[2] else cfg.stop_loss_weight
        return summarize(self.dist.all_sum(stats), k, cfg.kl_weight, stop_weight, cfg.hidden_weight,
                         cfg.token_loss_weight)

    def replica_diff(self) -> float:
        """Largest difference of any trainable weight between processes (0 when replicas agree)."""
        if not self.dist.active or is_fsdp(self.net):
            return 0.0  # FSDP: one sharded copy, nothing to compare
        flat = torch.cat([p.detach().float().flatten().cpu() for p in self.trainable])
        top, low = self.dist.all_max(flat.clone()), -self.dist.all_max(-flat)
        return float((top - low).abs().max())

    def log(self, record: dict) -> None:
        if self.dist.main:
            record = {"time": round(time.time(), 3), **record}
            with (self.run / "metrics.jsonl").open("a") as f:
                f.write(json.dumps(record) + "\n")

    # ------------------------------------------------------------------------------------ state
    def save(self) -> None:
        """Atomically replace RUN_DIR/last by a checkpoint + trainer state at the current step (rank 0
        writes; under FSDP every process helps gather the weights and optimizer state)."""
        fsdp = is_fsdp(self.net)
        opt_state = optimizer_state(self.net, self.optimizer)
        with gathered(self.model) if fsdp else contextlib.nullcontext():
            self._write(opt_state)
        self.dist.barrier()

    def _write(self, opt_state: dict) -> None:
        if self.dist.main:
            last, staging = self.run / "last", self.run / "last.saving"
            if staging.exists():
                shutil.rmtree(staging)
            save_checkpoint(self.model, staging, self.info, self.tokenizer, save_base=self.cfg.base_mode == "full",
                            extra={"training": {"step": self.step, "run": str(self.run)}})
            if self.fold_reader:
                write_fold_reader(staging, *self.fold_reader)
            epoch, index = self.plan.steps[self.step][:2] if self.step < len(self.plan.steps) else (None, None)
            state = {"step": self.step, "epoch": epoch, "index": index, "optimizer": opt_state,
                     "rng_python": list(random.getstate()[1]), "rng_torch": torch.get_rng_state(),
                     "config": json.dumps(self.cfg.to_dict()), "data_rows": len(self.rows),
                     "data_lengths": self._lengths_tensor()}
            torch.save(state, staging / STATE_FILE)
            old = self.run / "last.old"
            if last.exists():
                last.rename(old)
            staging.rename(last)
            if old.exists():
                shutil.rmtree(old)

    def _lengths_tensor(self) -> torch.Tensor:
        """The rows' lengths under every cut (one cut without recut), to recognise the data on resume."""
        return torch.tensor([n for lengths in self.cut_lengths for n in lengths])

    def _read_state(self, last: Path) -> dict:
        if not (last / STATE_FILE).is_file():
            raise HamburgerError(f"nothing to resume: {last / STATE_FILE} does not exist")
        read_meta(last)
        state = torch.load(last / STATE_FILE, weights_only=True, map_location="cpu")
        saved = TrainConfig.from_dict(json.loads(state["config"]), str(last / STATE_FILE))
        diff = saved.diff(self.cfg, ignore=TrainConfig.RESUMABLE)
        if diff:
            raise HamburgerError(f"--resume with settings that differ from the run's: {diff} (saved, given)")
        return state

    def _restore(self, state: dict) -> None:
        if state["data_rows"] != len(self.rows) or not torch.equal(state["data_lengths"], self._lengths_tensor()):
            raise HamburgerError("--resume: the training data is not the data this run started with")
        self.step = int(state["step"])
        at = tuple(self.plan.steps[self.step][:2]) if self.step < len(self.plan.steps) else None
        if state["epoch"] is not None and at is not None and at != (state["epoch"], state["index"]):
            raise HamburgerError("--resume: the batch plan changed (batch settings or data order)")
        load_optimizer_state(self.net, self.optimizer, state["optimizer"])
        random.setstate((3, tuple(int(x) for x in state["rng_python"]), None))
        torch.set_rng_state(state["rng_torch"])


def frozen_linears_to(model: torch.nn.Module, dtype: torch.dtype) -> int:
    """Store the weights of every frozen linear layer of a base ``model`` in ``dtype``; returns how many changed.

    Under autocast to ``dtype`` a linear layer casts its weight on every call, and autocast caches only the casts of
    weights that train: a frozen base (or a LoRA's frozen base layers, or the KL teacher's copy) was re-cast in
    every forward. Cast once, the products are bit for bit the same. Only layers
    whose parameters all stay frozen change; the output embedding (often the input embedding table itself) and
    everything that is not a linear layer (norms, embeddings) keep their dtype."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    changed = 0
    for module in model.modules():
        if (type(module) is torch.nn.Linear and module is not head and module.weight.dtype != dtype
                and not any(p.requires_grad for p in module.parameters())):
            module.to(dtype)
            changed += 1
    return changed


def adamw_options(device: torch.device, fsdp: bool = False) -> dict:
    """AdamW's implementation: fused (one kernel over all parameters) on CUDA when this torch build has it,
    foreach on CUDA otherwise (and under FSDP, whose sharded parameters we have not tried with fused); on the
    CPU torch's default per-parameter loop, so CPU runs stay exactly what they were."""
    if device.type != "cuda":
        return {}
    if not fsdp and "fused" in inspect.signature(torch.optim.AdamW).parameters:
        return {"fused": True}
    return {"foreach": True}


# ---------------------------------------------------------------------------------------- entry point
def train(cfg: TrainConfig, resume: bool = False) -> int:
    """Train as ``cfg`` says (``resume``: continue the run in ``cfg.out`` exactly where it stopped); under
    torchrun / accelerate every process calls this. Returns an exit code (0, or 128 + the signal that stopped it)."""
    if not cfg.data:
        raise HamburgerError("no training data: give --data DATASET.jsonl or set `data` in the config")
    trainer = Trainer(cfg, resume=resume)
    code = trainer.train()
    dist, step = trainer.dist, trainer.step
    if dist.active:
        # The DDP wrapper holds the process group: free it (and the cycles around it) now, so the group's
        # communication threads end inside `close` and not in the C++ teardown at interpreter exit, where
        # gloo can abort ("terminate called without an active exception").
        del trainer
        gc.collect()
    dist.close()  # on an exception, the launcher tears the group down instead
    if dist.main and code == 0:
        print(f"hamburger train: {step} steps done; checkpoint {Path(cfg.out) / 'last'}", file=sys.stderr)
    return code
