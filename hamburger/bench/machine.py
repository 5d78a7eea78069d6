"""Machine, versions, dtype, threads and env, recorded next to every benchmark result."""

from __future__ import annotations

import os
import platform
import subprocess


def machine_info(threads: int, dtype: str, device: str = "cpu") -> dict:
    import torch
    import transformers

    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
        "torch": torch.__version__, "transformers": transformers.__version__, "dtype": dtype, "threads": threads,
        "env": {k: os.environ.get(k) for k in ("MKL_CBWR", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "load_average": os.getloadavg(), "git_commit": commit,
        **({"device": device, "gpu": torch.cuda.get_device_name(), "cuda": torch.version.cuda}
           if device == "cuda" else {}),
    }
