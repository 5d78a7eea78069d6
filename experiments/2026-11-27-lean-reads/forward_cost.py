"""What reading each projection's weight through `nn.Module.__getattr__` (and a LoRA layer's `weight` property) costs
a lean forward: `LeanStack` over 4 new positions on a 300-slot cache of the default model's base, the way verify_fold
runs it (LoRA layers present, adapters idle) and the way lossless verify does (the unchanged base), with the read
before session 36 (`module.weight`, `module.bias`) and with `lean._linear`'s (the modules' own parameter dicts);
reads alternated rep by rep, median of 300 forwards each, 2 threads.

    python experiments/2026-11-27-lean-reads/forward_cost.py > experiments/2026-11-27-lean-reads/forward_cost.json
"""

import json
import statistics
import time

import torch
from torch.nn import functional as F
from transformers import DynamicCache

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core import lean
from hamburger.core.loading import load_model
from hamburger.core.lora import adapters_disabled
from hamburger.core.modules import base_decoder_stack

SLOTS, NEW, REPS = 300, 4, 300


def attribute_linear(module, x):
    """The read before session 36."""
    return F.linear(x, module.weight, module.bias)


def costs(model) -> dict:
    stack = base_decoder_stack(model.base)
    runner = lean.LeanStack(stack)
    d = stack.config.hidden_size
    g = torch.Generator().manual_seed(0)
    prompt = torch.randn(1, SLOTS, d, generator=g)
    x = torch.randn(1, NEW, d, generator=g)
    mask = torch.ones(1, 1, NEW, SLOTS + NEW, dtype=torch.bool)
    positions = torch.arange(SLOTS, SLOTS + NEW)[None]
    times = {"attribute": [], "parameter_dict": []}
    with torch.inference_mode(), adapters_disabled(stack):
        cache = DynamicCache(config=stack.config)
        stack(inputs_embeds=prompt, position_ids=torch.arange(SLOTS)[None], past_key_values=cache, use_cache=True)
        own = lean._linear
        for rep in range(2 * REPS):
            name = ("attribute", "parameter_dict")[rep % 2]
            lean._linear = attribute_linear if name == "attribute" else own
            try:
                start = time.perf_counter()
                runner(x, positions, mask, cache, model.config.tap_layers)
                times[name].append(time.perf_counter() - start)
            finally:
                lean._linear = own
            cache.crop(-NEW)
    return {k: round(1000 * statistics.median(v), 3) for k, v in times.items()}


def main() -> None:
    torch.set_num_threads(2)
    model, _, _, reference = load_model(None, reference=True)
    out = {"machine": machine_info(2, "float32"), "slots": SLOTS, "new_positions": NEW, "reps": REPS,
           "verify_fold (LoRA layers, idle) ms": costs(model), "verify (unchanged base) ms": costs(reference)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
