"""What the lean pass gains on mixtures of experts, whose MLPs it runs as their own modules: session 71's measurement
(`../2026-12-05-lean-families/forward_cost.py`: the stack's forward on a 300-slot engine cache at 1 and 4 new positions,
and verify_fold's default decode of 160 tokens; lean pass against transformers' layers, alternated) on random bases
with published shapes. Cost depends on shapes, not weights (the router's random choices spread tokens over experts as
a trained one may not), and the stack reads no vocabulary, so it is cut to 1,024 rows.

- granite-3.0-1b-a400m: whole (24 layers, 32 experts, 8 active);
- qwen3-30b-a3b and gpt-oss-20b: their layers' shapes, but 2 layers of 48 and 24 (the whole would not fit in memory
  here in fp32). A forward of these is the cost of two of their layers; the decode's tok/s means only its ratio.

    E=experiments/2026-12-06-lean-experts; PYTHONPATH=. python $E/forward_cost.py > $E/forward_cost.json
"""

import gc
import importlib.util
import json
import sys
from pathlib import Path

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core.config import HamburgerConfig
from hamburger.core.model import HamburgerModel

SHAPES = {  # (transformers classes, the published config's sizes; depth cut where noted above)
    "granite-3.0-1b-a400m": ("GraniteMoeConfig", "GraniteMoeForCausalLM", dict(
        hidden_size=1024, intermediate_size=512, num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=8,
        num_local_experts=32, num_experts_per_tok=8, embedding_multiplier=12.0, residual_multiplier=0.22,
        attention_multiplier=0.015625, logits_scaling=6.0, rms_norm_eps=1e-6)),
    "qwen3-30b-a3b (2 layers)": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(
        hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_hidden_layers=2,
        num_attention_heads=32, num_key_value_heads=4, head_dim=128, num_experts=128, num_experts_per_tok=8,
        norm_topk_prob=True, rms_norm_eps=1e-6)),
    "gpt-oss-20b (2 layers)": ("GptOssConfig", "GptOssForCausalLM", dict(
        hidden_size=2880, intermediate_size=2880, num_hidden_layers=2, num_attention_heads=64, num_key_value_heads=8,
        head_dim=64, num_local_experts=32, num_experts_per_tok=4, sliding_window=128,
        layer_types=["sliding_attention", "full_attention"], rms_norm_eps=1e-5)),
}


ATTENTION = {"gpt-oss-20b (2 layers)": "eager"}  # (gpt-oss has no SDPA path in transformers: its sinks)


def random_base(shape: str):
    import transformers

    config_class, model_class, sizes = SHAPES[shape]
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**session71().COMMON, **sizes,
                                                 attn_implementation=ATTENTION.get(shape, "sdpa"))
    return getattr(transformers, model_class)(config).eval()


def session71():
    """`../2026-12-05-lean-families/forward_cost.py`, its shapes replaced by these."""
    path = Path(__file__).resolve().parents[1] / "2026-12-05-lean-families" / "forward_cost.py"
    spec = importlib.util.spec_from_file_location("lean_families_cost", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.SHAPES = SHAPES
    return module


def main() -> None:
    torch.set_num_threads(2)
    cost = session71()
    out = {"machine": machine_info(2, "float32"), "slots": cost.SLOTS, "reps": cost.REPS,
           "decode": {"prompt": cost.PROMPT, "new_tokens": cost.NEW, "runs": cost.RUNS, "fold": cost.DEFAULT_FOLD},
           "shapes": {}}
    for shape in SHAPES:
        print(shape, file=sys.stderr, flush=True)
        model = HamburgerModel(random_base(shape), HamburgerConfig(max_steps=4)).eval()
        assert model._lean_stack() is not None, f"{shape}: no lean pass"
        out["shapes"][shape] = {"sizes": SHAPES[shape][2], "forward": cost.forward_cost(model),
                                "decode": cost.decode_speed(model)}
        del model
        gc.collect()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
