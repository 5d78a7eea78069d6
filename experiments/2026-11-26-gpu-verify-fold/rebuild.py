"""Rebuild the lent GPU's lora-verify-fold export (a full HAMburger checkpoint) from its committed delta: the run left
the micro-step decoder and the stop head exactly as its init had them (experiments/2026-11-25-gpu-v2-two-sets/
warm_start; `stop_loss_weight: 0` and one-token groups give them no gradient), so only the embedder, the LoRA adapters
and the config are stored here (warm_start_delta/, 13 MiB instead of 27). Any run trained that way from that init
stores the same kind of delta (`--delta`, refused when anything else differs from the init).

    python experiments/2026-11-26-gpu-verify-fold/rebuild.py OUT_DIR [DELTA_DIR]    # (default: warm_start_delta)
    python experiments/2026-11-26-gpu-verify-fold/rebuild.py --delta CHECKPOINT DELTA_DIR
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

HERE = Path(__file__).resolve().parent
INIT = HERE.parent / "2026-11-25-gpu-v2-two-sets" / "warm_start"
DELTA = HERE / "warm_start_delta"


def rebuild(out: Path, delta: Path = DELTA) -> None:
    grafted = load_file(str(INIT / "grafted.safetensors"))
    embedder = load_file(str(delta / "embedder.safetensors"))
    if set(embedder) != {k for k in grafted if k.startswith("embedder.")}:
        raise SystemExit(f"{delta}: its embedder does not match {INIT}'s")
    out.mkdir(parents=True, exist_ok=True)
    save_file({**grafted, **embedder}, str(out / "grafted.safetensors"))
    for name in ("lora.safetensors", "hamburger_config.json"):
        shutil.copy(delta / name, out / name)
    print(f"rebuilt {out}")


def make_delta(checkpoint: Path, delta: Path) -> None:
    """The delta of a bf16 checkpoint (e.g. `hamburger export --dtype bfloat16`) on INIT: its embedder, adapters and
    config, if every other grafted tensor equals INIT's."""
    init, grafted = load_file(str(INIT / "grafted.safetensors")), load_file(str(checkpoint / "grafted.safetensors"))
    changed = [k for k in init if not k.startswith("embedder.") and not torch.equal(init[k], grafted[k])]
    if set(init) != set(grafted) or changed:
        raise SystemExit(f"{checkpoint} differs from {INIT} beyond the embedder ({changed[:3]}...): no delta")
    delta.mkdir(parents=True, exist_ok=True)
    save_file({k: v for k, v in grafted.items() if k.startswith("embedder.")}, str(delta / "embedder.safetensors"))
    for name in ("lora.safetensors", "hamburger_config.json"):
        shutil.copy(checkpoint / name, delta / name)
    print(f"wrote {delta}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--delta":
        make_delta(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) in (2, 3) and not sys.argv[1].startswith("-"):
        rebuild(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) == 3 else DELTA)
    else:
        raise SystemExit(__doc__)
