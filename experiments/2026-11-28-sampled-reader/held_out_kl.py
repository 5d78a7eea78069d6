"""Held-out KL of each sampled-reader arm in both directions (session 45). A run's own eval reports its training mix
(sr half-and-half, fkl forward, rkl reverse), so those figures do not compare; here every reader is scored the same
way: forward KL(base || reader) and reverse KL(reader || base) on the greedy held-out rows (val-long, 53 rows) in the
default fold's layout, each reader as it ships (its exported bf16 adapters), the start (the shipped reader) beside.

    E=experiments/2026-11-28-sampled-reader  # (run from the checkout root: the readers' paths are relative to it)
    python $E/held_out_kl.py > $E/held_out_kl.jsonl
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from hamburger.train.config import TrainConfig
from hamburger.train.trainer import Trainer

READERS = {"af-reader (start)": "runs/keep-fold/warm-after-export", "sr": "runs/sampled-reader/export",
           "fkl": "runs/sampled-reader/export-fkl", "rkl": "runs/sampled-reader/export-rkl"}


def main() -> None:
    settings = json.loads(Path("runs/sampled-reader/train/config.json").read_text())
    for name, path in READERS.items():
        if not (Path(path) / "hamburger_config.json").exists():
            print(f"(skipped {name}: {path} missing)", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory() as out:
            cfg = TrainConfig.from_dict({**settings, "init": path, "out": out, "seed": 0})
            trainer = Trainer(cfg)
            row = {"reader": name, "path": path, "rows": len(trainer.eval_rows)}
            for direction, mix in (("forward_kl", 0.0), ("reverse_kl", 1.0)):
                trainer.model.config.kl_mix = mix
                row[direction] = round(trainer.evaluate()["kl"], 6)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
