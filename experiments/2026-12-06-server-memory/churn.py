"""Does the prompt cache's churn make a process's memory grow once the store is full, and does glibc's malloc
hold on to what the freed KV tensors leave (fragmentation)? One process, the bundled model, a small store (so it fills
early), a stream of prompts that share a start and differ after it (each kept prompt holds its own slots; the oldest
go), answered one by one; the RSS sampled every --every prompts.

    python experiments/2026-12-06-server-memory/churn.py --out churn-default.json
    MALLOC_MMAP_THRESHOLD_=131072 python experiments/2026-12-06-server-memory/churn.py --out churn-mmap.json

    python experiments/2026-12-06-server-memory/churn.py --trim-every 20 --out churn-trim.json

The second sets glibc's mmap threshold (and so stops its dynamic growth): blocks of 128 KiB and more are mapped
and unmapped on their own, given back to the system when freed. The third calls glibc's `malloc_trim(0)` every 20
prompts, which gives the system back the free pages of the heap. Each run writes its machine, versions and settings.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import sys
import time
from pathlib import Path

import psutil
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import hamburger  # noqa: E402,F401
from hamburger.core.loading import load_model, set_threads  # noqa: E402
from hamburger.engine.generate import Generation  # noqa: E402
from hamburger.engine.prompt import encode_prompt  # noqa: E402
from hamburger.engine.prompt_cache import PromptCache  # noqa: E402
from hamburger.engine.sampling import DecodingConfig  # noqa: E402

SYSTEM = ("You are a careful assistant. Answer in one short sentence, plainly, without lists or headings, and say so "
          "when you do not know.")


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2 ** 20


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompts", type=int, default=600, help="prompts answered, one by one")
    p.add_argument("--store-mib", type=float, default=32, help="the prompt cache's size")
    p.add_argument("--max-tokens", type=int, default=4)
    p.add_argument("--every", type=int, default=20, help="prompts between RSS samples")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--trim-every", type=int, default=0, help="prompts between malloc_trim(0) calls (0: none)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    set_threads(args.threads)
    trim = ctypes.CDLL("libc.so.6").malloc_trim if args.trim_every else None
    model, tok, _ = load_model()
    store = PromptCache(int(args.store_mib * 2 ** 20))
    cfg = DecodingConfig(max_new_tokens=args.max_tokens, confidence=0.9)
    samples, start = [{"prompts": 0, "rss_mb": round(rss_mb(), 1), "store_mb": 0.0, "s": 0.0}], time.perf_counter()
    for i in range(args.prompts):
        words = " ".join(f"item{(i * 7 + k) % 997}" for k in range(20 + i % 40))  # (lengths vary: 20-59 words)
        ids = encode_prompt(tok, [{"role": "system", "content": SYSTEM},
                                  {"role": "user", "content": f"Question {i}: which of these comes first? {words}"}])
        with torch.inference_mode():
            list(Generation(model, tok, [ids], cfg, prompt_cache=store))
        if trim is not None and (i + 1) % args.trim_every == 0:
            trim(0)
        if (i + 1) % args.every == 0:
            samples.append({"prompts": i + 1, "rss_mb": round(rss_mb(), 1),
                            "store_mb": round(store.stats()["bytes"] / 2 ** 20, 1),
                            "s": round(time.perf_counter() - start, 1)})
            print(samples[-1], flush=True)
    full = next((s["prompts"] for s in samples if s["store_mb"] >= 0.9 * args.store_mib), None)
    after = [s for s in samples if full is not None and s["prompts"] >= full]
    record = {
        "experiment": "prompt-cache churn and RSS", "settings": vars(args),
        "env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_") or k in ("OMP_NUM_THREADS",)},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "torch": torch.__version__, "hamburger": hamburger.__version__, "dtype": "float32"},
        "store_full_at_prompt": full, "seconds": samples[-1]["s"],
        "rss_mb_when_full": after[0]["rss_mb"] if after else None, "rss_mb_last": samples[-1]["rss_mb"],
        "rss_mb_max_after_full": max(s["rss_mb"] for s in after) if after else None,
        "samples": samples}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print({k: v for k, v in record.items() if k != "samples"})


if __name__ == "__main__":
    main()
