"""How long the prompt cache takes to look a prompt up, by how many prompts it keeps, at the commit it runs in (the
record names it). The store holds N prompts, each a 300-token start they all share followed by 20-299 tokens of its
own (seeded), added through `PromptCache.add` with a cache of one slot per token on a one-layer Llama config of one
4-channel head (the slots' contents do not matter to a lookup); then `PromptCache.find` looks up a prompt that begins
with the shared start, REPS times (median). The engine looks each new prompt up once and adds it once; `add` scans the
store as `find` does.

    python experiments/2026-12-06-shared-prompt-starts/lookup.py > experiments/2026-12-06-shared-prompt-starts/lookup.json
"""

import json
import random
import statistics
import time

import torch
from transformers import LlamaConfig

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.engine.cache import SlotCache
from hamburger.engine.prompt_cache import PromptCache

SIZES, SHARED, REPS = (100, 500, 2000), 300, 20
CONFIG = LlamaConfig(vocab_size=1000, hidden_size=4, num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                     intermediate_size=8)


def one_row(length: int) -> SlotCache:
    cache = SlotCache(CONFIG, 1)
    cache.extend(torch.ones(1, length, dtype=torch.bool))
    cache.kv.layers[0].update(torch.zeros(1, 1, length, 4), torch.zeros(1, 1, length, 4))
    return cache


def main() -> None:
    torch.set_num_threads(2)
    rng = random.Random(0)
    shared = [rng.randrange(1000) for _ in range(SHARED)]
    store, rows = PromptCache(1 << 40), []
    with torch.inference_mode():
        for n in range(1, max(SIZES) + 1):
            prompt = shared + [rng.randrange(1000) for _ in range(rng.randrange(20, 300))]
            store.add(prompt, one_row(len(prompt)), {c: torch.zeros(1, 4) for c in store.cuts(0, len(prompt),
                                                                                              len(prompt))})
            if n in SIZES:
                asked = shared + [rng.randrange(1000) for _ in range(50)]
                times = []
                for _ in range(REPS):
                    start = time.perf_counter()
                    hit = store.find(asked)
                    times.append(time.perf_counter() - start)
                rows.append({"kept_prompts": len(store), "find_ms": round(1000 * statistics.median(times), 3),
                             "cut": hit.length})
    print(json.dumps({"benchmark": "prompt_cache_lookup", "machine": machine_info(2, "float32"), "shared_tokens": SHARED,
                      "reps": REPS, "lookups": rows}, indent=1))


if __name__ == "__main__":
    main()
