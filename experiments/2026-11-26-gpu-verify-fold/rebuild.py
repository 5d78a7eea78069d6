"""Rebuild the lent GPU's lora-verify-fold export (a full HAMburger checkpoint) from its committed delta: the run left
the micro-step decoder and the stop head exactly as its init had them (experiments/2026-11-25-gpu-v2-two-sets/
warm_start; `stop_loss_weight: 0` and one-token groups give them no gradient), so only the embedder, the LoRA adapters
and the config are stored here (warm_start_delta/, 13 MiB instead of 27).

    python experiments/2026-11-26-gpu-verify-fold/rebuild.py OUT_DIR
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

HERE = Path(__file__).resolve().parent
INIT = HERE.parent / "2026-11-25-gpu-v2-two-sets" / "warm_start"
DELTA = HERE / "warm_start_delta"


def rebuild(out: Path) -> None:
    grafted = load_file(str(INIT / "grafted.safetensors"))
    embedder = load_file(str(DELTA / "embedder.safetensors"))
    if set(embedder) != {k for k in grafted if k.startswith("embedder.")}:
        raise SystemExit(f"{DELTA}: its embedder does not match {INIT}'s")
    out.mkdir(parents=True, exist_ok=True)
    save_file({**grafted, **embedder}, str(out / "grafted.safetensors"))
    for name in ("lora.safetensors", "hamburger_config.json"):
        shutil.copy(DELTA / name, out / name)
    print(f"rebuilt {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    rebuild(Path(sys.argv[1]))
