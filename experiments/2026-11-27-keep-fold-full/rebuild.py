"""The CPU run's warm start as a full HAMburger checkpoint, from what is committed here: the run trained only LoRA
adapters (`lr_grafted 0`), so its grafted modules and draft tables are the shipped model's, and warm_start/ holds only
its adapters and config (bf16). `--save` writes warm_start/ from an export of the run (refused if its grafted modules
differ from the shipped model's).

    python experiments/2026-11-27-keep-fold-full/rebuild.py OUT_DIR                # warm_start/ + the shipped modules
    python experiments/2026-11-27-keep-fold-full/rebuild.py OUT_DIR after_fold     # ... its adapters under that scope
    python experiments/2026-11-27-keep-fold-full/rebuild.py --save EXPORT_DIR      # (bf16 export) -> warm_start/

WARM_DIR=NAME reads (and saves) another folder here in place of warm_start/ (session 43: warm_start_after_fold_decay,
the annealed after-fold run's adapters at step 140 since session 44 (85 before), already at
`lora_scope: after_fold`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

from hamburger.core.loading import DEFAULT_MODEL_DIR

HERE = Path(__file__).resolve().parent
WARM = HERE / os.environ.get("WARM_DIR", "warm_start")
OWN = ("lora.safetensors", "hamburger_config.json")  # the run's; everything else is the shipped model's
SHIPPED = ("grafted.safetensors", "draft_ngrams.safetensors", "draft_vocab.safetensors")


def rebuild(out: Path, scope: str | None = None) -> None:
    """The warm start as a checkpoint in ``out``; ``scope``: its adapters under that `lora_scope` (session 41:
    after_fold, the same adapters switched on only from a row's first fold on)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        shutil.copy(DEFAULT_MODEL_DIR / name, out / name)
    for name in OWN:
        shutil.copy(WARM / name, out / name)
    if scope:
        meta = json.loads((out / OWN[1]).read_text())
        meta["config"]["lora_scope"] = scope
        (out / OWN[1]).write_text(json.dumps(meta, indent=2))
    print(f"rebuilt {out}" + (f" (lora_scope {scope})" if scope else ""))


def save(export: Path) -> None:
    shipped, got = load_file(str(DEFAULT_MODEL_DIR / SHIPPED[0])), load_file(str(export / SHIPPED[0]))
    if set(shipped) != set(got) or any(not torch.equal(shipped[k], got[k]) for k in shipped):
        raise SystemExit(f"{export}'s grafted modules are not the shipped model's: no warm start from it")
    WARM.mkdir(exist_ok=True)
    for name in OWN:
        shutil.copy(export / name, WARM / name)
    print(f"wrote {WARM}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--save":
        save(Path(sys.argv[2]))
    elif len(sys.argv) in (2, 3) and not sys.argv[1].startswith("-"):
        rebuild(Path(sys.argv[1]), *sys.argv[2:])
    else:
        raise SystemExit(__doc__)
