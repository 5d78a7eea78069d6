"""Give a checkpoint made before the stop head read the chosen token a token-aware stop head.

    python recipes/upgrade_stop_head.py SRC_CHECKPOINT DST_CHECKPOINT

The first stop-head layer gets zero weights for the new token-embedding half, so the upgraded model
computes exactly what the old one did until training moves those weights. Everything else is copied.
Used once by recipes/default-model.sh (its first pass was trained before the change).
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from hamburger.core.checkpoint import CONFIG_FILE, WEIGHTS_FILE

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
meta = json.loads((src / CONFIG_FILE).read_text())
if meta["config"].get("stop_sees_token", False):
    raise SystemExit(f"{src}: the stop head already reads the token")
if dst.exists():
    shutil.rmtree(dst)
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("trainer_state.pt"))
state = load_file(str(src / WEIGHTS_FILE))
w = state["stop_head.net.0.weight"]
state["stop_head.net.0.weight"] = torch.cat([w, torch.zeros_like(w)], 1).contiguous()
save_file(state, str(dst / WEIGHTS_FILE), metadata={"format": meta["format"]})
meta["config"]["stop_sees_token"] = True
(dst / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")
print(f"{src} -> {dst}: stop head input {w.shape[1]} -> {2 * w.shape[1]}")
