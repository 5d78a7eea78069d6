"""`hamburger train`: teacher-forced training of a HAMburger model on a dataset from `hamburger segment`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hamburger.cli.options import add_runtime

DTYPE_SETTING = {"float32": "fp32", "bfloat16": "bf16"}  # --dtype -> the TrainConfig `dtype` (autocast) setting


def train_config(args: argparse.Namespace):
    """The run's TrainConfig: --config, then --set, then the options (on --resume without --config: the run's own
    saved settings in place of the file)."""
    from hamburger.core.checkpoint import is_checkpoint
    from hamburger.train.config import build_config

    extra = {"out": args.out, "data": args.data, "eval_data": args.eval_data, "device": args.device,
             "dtype": DTYPE_SETTING.get(args.dtype), "threads": args.threads}
    if args.model:
        extra["init" if is_checkpoint(args.model) else "base"] = args.model
    cfg = build_config(args.config, args.set, extra)
    if args.resume and not args.config and (Path(cfg.out) / "config.json").is_file():
        saved = json.loads((Path(cfg.out) / "config.json").read_text())  # the run's own settings
        cfg = build_config(None, args.set, extra, saved=saved)
    return cfg


def cmd_train(args: argparse.Namespace) -> int:
    from hamburger.core.base import pick_device
    from hamburger.train.trainer import train

    cfg = train_config(args)
    pick_device(cfg.device)  # a one-line error for cuda without a GPU, before anything loads
    return train(cfg, resume=args.resume)


def register(sub) -> None:
    p = sub.add_parser(
        "train", help="train a HAMburger model on segmented data",
        description="Train the grafted modules (and optionally the base: base_mode frozen|lora|full) on a dataset "
                    "from `hamburger segment`. Settings come from --config (YAML/TOML), then --set key=value, "
                    "then the options below. Multi-process: torchrun --nproc_per_node N -m hamburger.cli train ... "
                    "(docs/training.md lists every setting, launch lines and the run folder layout).")
    p.add_argument("--config", default=None, help="settings file (.yaml/.toml/.json); keys are TrainConfig fields")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one setting (repeatable)")
    p.add_argument("--model", default=None, help="HAMburger checkpoint to start from, or a base model spec to graft on")
    p.add_argument("--data", default=None, help="training dataset (jsonl from `hamburger segment`)")
    p.add_argument("--eval-data", default=None, help="held-out dataset for periodic evaluation")
    p.add_argument("--out", default=None, help="run folder (metrics.jsonl, config.json, last/)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out exactly where it stopped")
    add_runtime(p, from_config=True)
    p.set_defaults(func=cmd_train)
