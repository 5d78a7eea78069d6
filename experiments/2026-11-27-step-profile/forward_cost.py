"""What the lean forward's three cheaper parts (one `F.rms_norm` per norm, a rotary embedding by `roll`, grouped SDPA
heads read in place) save: `LeanStack` as of a given commit (default 0fc2e7a, before them) against the working tree's,
on the default model's base, forwards of 1..6 new positions on a 300-slot cache (the engine's spare-slot cache),
alternated rep by rep, median of 200 forwards each, 2 threads; and whether both give the same bits.

    python experiments/2026-11-27-step-profile/forward_cost.py > experiments/2026-11-27-step-profile/forward_cost.json
"""

import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core import lean
from hamburger.core.loading import load_model
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.cache import spare_slots_cache

SLOTS, REPS = 300, 200


def lean_at(commit: str):
    """hamburger/core/lean.py as of ``commit``, imported as its own module."""
    source = subprocess.run(["git", "show", f"{commit}:hamburger/core/lean.py"], capture_output=True, text=True,
                            check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("lean_before", f.name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (a dataclass in it looks its module up there)
    spec.loader.exec_module(module)
    return module


def alternate(runners: dict, forward, reps: int, digits: int, prepare=lambda: None, finish=lambda: None):
    """``forward(runner, prepare())`` -> outputs, timed, then ``finish()``, for the runners "before" and "after"
    alternated rep by rep: (median ms of each, whether their last outputs are the same bits)."""
    times, outputs = {k: [] for k in runners}, {}
    for rep in range(2 * reps):
        name = ("before", "after")[rep % 2]
        arg = prepare()
        start = time.perf_counter()
        outputs[name] = forward(runners[name], arg)
        times[name].append(time.perf_counter() - start)
        finish()
    medians = {k: round(1000 * statistics.median(v), digits) for k, v in times.items()}
    return medians, all(torch.equal(a, b) for a, b in zip(outputs["before"], outputs["after"]))


def setup() -> tuple:
    """(commit before, the default model, its base's decoder stack, the two `LeanStack`s on it), 2 threads."""
    commit = sys.argv[1] if len(sys.argv) > 1 else "0fc2e7a"
    torch.set_num_threads(2)
    model = load_model(None)[0]
    stack = base_decoder_stack(model.base)
    return commit, model, stack, {"before": lean_at(commit).LeanStack(stack), "after": lean.LeanStack(stack)}


def main() -> None:
    commit, model, stack, runners = setup()
    after = runners["after"]
    first_norms = after.layers[0].norms if hasattr(after, "layers") else after.norms[0]  # (`LeanLayer`s since s71)
    parts = {"norm": first_norms[0].__name__, "rotation": after.rotation.__name__,
             "attention": after.attend.__qualname__}
    g = torch.Generator().manual_seed(0)
    d = stack.config.hidden_size
    out = {"machine": machine_info(2, "float32"), "before_commit": commit, "parts_after": parts, "slots": SLOTS,
           "median_ms": {}, "identical": {}}
    with torch.inference_mode():
        cache = spare_slots_cache(stack.config)
        stack(inputs_embeds=torch.randn(1, SLOTS, d, generator=g), position_ids=torch.arange(SLOTS)[None],
              past_key_values=cache, use_cache=True)
        for new in range(1, 7):
            x = torch.randn(1, new, d, generator=g)
            mask = torch.ones(1, 1, new, SLOTS + new, dtype=torch.bool)
            mask[..., SLOTS:] = torch.ones(new, new, dtype=torch.bool).tril()
            positions = torch.arange(SLOTS, SLOTS + new)[None]

            def forward(runner, _):
                final, taps = runner(x, positions, mask, cache, model.config.tap_layers)
                return final, *taps
            out["median_ms"][new], out["identical"][new] = alternate(runners, forward, REPS, 3,
                                                                     finish=lambda: cache.crop(-new))
            print(new, out["median_ms"][new], out["identical"][new], file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
