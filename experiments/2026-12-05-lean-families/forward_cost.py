"""What the lean pass's new families gain: forwards of random bases with the published shapes of Qwen3-0.6B and
Gemma-3-270m (query and key norms; Gemma 3's norms after each block, sliding windows and rotation per layer type),
and SmolLM2-135M (Llama's parts, lean before this change too) as the control. Cost depends on shapes, not weights,
and the stack's forward reads no vocabulary, so the vocabulary is cut to 1,024 rows.

1. `forward`: the decoder stack's inference forward on a 300-slot engine cache (`spare_slots_cache`), 1 and 4 new
   positions, `LeanStack` against transformers' stack, alternated rep by rep, median ms of 100 each, and the largest
   difference of their outputs relative to the outputs' scale.
2. `decode`: verify_fold's default (`DEFAULT_FOLD`: 8/4-bit history store) on a HAMburger with an untrained graft,
   a 40-token random prompt, 160 new tokens, ignore EOS, `model.lean` on (the pass, the store read by it) against off
   (transformers' layers, the store read through them), alternated, 3 runs each: median tok/s, same tokens?

    python experiments/2026-12-05-lean-families/forward_cost.py > experiments/2026-12-05-lean-families/forward_cost.json
"""

import json
import statistics
import sys
import time

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core.config import HamburgerConfig
from hamburger.core.masks import as_read_by, by_layer_type
from hamburger.core.model import HamburgerModel
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.cache import spare_slots_cache
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration

SLOTS, REPS, RUNS, PROMPT, NEW = 300, 100, 3, 40, 160
COMMON = dict(vocab_size=1024, max_position_embeddings=4096, bos_token_id=None, eos_token_id=None,
              tie_word_embeddings=True)
SHAPES = {  # (transformers classes, the published config's sizes)
    "qwen3-0.6b": ("Qwen3Config", "Qwen3ForCausalLM", dict(
        hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
        head_dim=128, rms_norm_eps=1e-6)),
    "gemma-3-270m": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        hidden_size=640, intermediate_size=2048, num_hidden_layers=18, num_attention_heads=4, num_key_value_heads=1,
        head_dim=256, query_pre_attn_scalar=256, sliding_window=512, rms_norm_eps=1e-6,
        layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 3)),
    "smollm2-135m": ("LlamaConfig", "LlamaForCausalLM", dict(
        hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3)),
}


class NullTokenizer:
    """What the engine needs of a tokenizer when the ids mean nothing (random weights)."""

    eos_token_id = None
    pad_token_id = 0

    def decode(self, ids, **kwargs) -> str:
        return ""


def random_base(shape: str):
    import transformers

    config_class, model_class, sizes = SHAPES[shape]
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**COMMON, **sizes, attn_implementation="sdpa")
    return getattr(transformers, model_class)(config).eval()


def forward_cost(model) -> dict:
    stack, lean = base_decoder_stack(model.base), model._lean_stack()
    config, g = stack.config, torch.Generator().manual_seed(0)
    out = {}
    with torch.inference_mode():
        cache = spare_slots_cache(config)
        positions = torch.arange(SLOTS)[None]
        mask = by_layer_type(torch.ones(1, 1, SLOTS, SLOTS, dtype=torch.bool).tril(), config, positions, positions)
        stack(inputs_embeds=torch.randn(1, SLOTS, config.hidden_size, generator=g), position_ids=positions,
              attention_mask=mask, past_key_values=cache, use_cache=True)
        for new in (1, 4):
            x = torch.randn(1, new, config.hidden_size, generator=g)
            queries, keys = torch.arange(SLOTS, SLOTS + new)[None], torch.arange(SLOTS + new)[None]
            slots = torch.ones(1, 1, new, SLOTS + new, dtype=torch.bool)
            slots[..., SLOTS:] = torch.ones(new, new, dtype=torch.bool).tril()
            mask = by_layer_type(slots, config, queries, keys)
            ways = {"lean": lambda: lean(x, queries, mask, cache, ())[0],
                    "transformers": lambda: stack(inputs_embeds=x, position_ids=queries, past_key_values=cache,
                                                  attention_mask=as_read_by(mask, config._attn_implementation,
                                                                            x.dtype), use_cache=True).last_hidden_state}
            times, last = {k: [] for k in ways}, {}
            for rep in range(2 * REPS):
                name = ("lean", "transformers")[rep % 2]
                start = time.perf_counter()
                last[name] = ways[name]()
                times[name].append(time.perf_counter() - start)
                cache.crop(-new)
            ms = {k: round(1000 * statistics.median(v), 3) for k, v in times.items()}
            scale = last["transformers"].abs().max().clamp(min=1.0)
            diff = float((last["lean"] - last["transformers"]).abs().max() / scale)
            out[new] = {"median_ms": ms, "speedup": round(ms["transformers"] / ms["lean"], 3), "max_rel_diff": diff}
            print(new, out[new], file=sys.stderr, flush=True)
    return out


def decode_speed(model) -> dict:
    prompt = torch.randint(4, 1024, (PROMPT,), generator=torch.Generator().manual_seed(1)).tolist()
    cfg = DecodingConfig(max_new_tokens=NEW, ignore_eos=True)
    times, tokens = {True: [], False: []}, {}
    for rep in range(2 * RUNS):
        model.lean = rep % 2 == 0
        start = time.perf_counter()
        result = VerifyGeneration(model, NullTokenizer(), [prompt], cfg, fold=parse_folding(DEFAULT_FOLD)).run()[0]
        times[model.lean].append(time.perf_counter() - start)
        tokens[model.lean] = result.token_ids
    model.lean = True
    tok_s = {("lean" if k else "transformers"): round(NEW / statistics.median(v), 2) for k, v in times.items()}
    out = {"tok_s": tok_s, "speedup": round(tok_s["lean"] / tok_s["transformers"], 3),
           "same_tokens": tokens[True] == tokens[False], "kv_slots": result.kv_slots,
           "kv_slots_ordinary": result.kv_slots_ordinary}
    print(out, file=sys.stderr, flush=True)
    return out


def main() -> None:
    torch.set_num_threads(2)
    out = {"machine": machine_info(2, "float32"), "slots": SLOTS, "reps": REPS, "decode": {"prompt": PROMPT,
           "new_tokens": NEW, "runs": RUNS, "fold": DEFAULT_FOLD}, "shapes": {}}
    for shape in SHAPES:
        model = HamburgerModel(random_base(shape), HamburgerConfig(max_steps=4)).eval()
        assert model._lean_stack() is not None, f"{shape}: no lean pass"
        print(shape, file=sys.stderr, flush=True)
        out["shapes"][shape] = {"sizes": SHAPES[shape][2], "forward": forward_cost(model),
                                "decode": decode_speed(model)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
