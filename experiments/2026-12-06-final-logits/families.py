"""Which of transformers' causal-LM families the engine serves: a tiny random base of each (the tests' sizes,
`tests.helpers.tiny_base`) through the engine's two equalities, and whether the lean pass takes it.

For each family: does a HAMburger graft on it; at confidence 1.0, is the decode of two prompts the base's own greedy one
(HF `generate`); does a decode with merges give the teacher-forced training forward's logits; does `LeanStack` take
its stack; and the largest difference between the base's logits and its LM head's raw output on six tokens, relative
to the logits' scale (0 where the causal LM returns the head's output as it is; `FinalLogits`).

    E=experiments/2026-12-06-final-logits; PYTHONPATH=. python $E/families.py > $E/families.md
"""

import sys
import traceback

import torch
import transformers

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.core.lean import LeanStack
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.generate import generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests import helpers
from tests.helpers import (PROMPTS, assert_engine_matches_training_forward, hf_greedy, make_char_tokenizer,
                           tiny_base, tiny_hamburger)

MOE = {"num_experts_per_tok": 2, "moe_intermediate_size": 32}
PROBED = {  # families not in the tests' lists, with what their tiny configs need
    "qwen2moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", {**MOE, "num_experts": 4,
                                                           "shared_expert_intermediate_size": 64}),
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM", {"num_experts": 4, "num_experts_per_tok": 2}),
    "cohere2": ("Cohere2Config", "Cohere2ForCausalLM", {"logit_scale": 0.0625, "sliding_window": 8}),
    "glm": ("GlmConfig", "GlmForCausalLM", {"head_dim": 16}),
    "helium": ("HeliumConfig", "HeliumForCausalLM", {"head_dim": 16}),
    "olmo": ("OlmoConfig", "OlmoForCausalLM", {}),
    "olmo3": ("Olmo3Config", "Olmo3ForCausalLM", {"sliding_window": 8}),
    "ministral": ("MinistralConfig", "MinistralForCausalLM", {"sliding_window": 8, "head_dim": 16}),
    "seed_oss": ("SeedOssConfig", "SeedOssForCausalLM", {"head_dim": 16}),
    "ernie4_5": ("Ernie4_5Config", "Ernie4_5ForCausalLM", {"head_dim": 16}),
    "apertus": ("ApertusConfig", "ApertusForCausalLM", {"head_dim": 16}),
    "nemotron": ("NemotronConfig", "NemotronForCausalLM", {"head_dim": 16}),
    "bitnet": ("BitNetConfig", "BitNetForCausalLM", {}),
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM", {}),
    "granitemoehybrid": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", {"num_local_experts": 4,
                                                                                   "num_experts_per_tok": 2}),
    "qwen3_next": ("Qwen3NextConfig", "Qwen3NextForCausalLM", {**MOE, "head_dim": 16, "num_experts": 4}),
    "lfm2": ("Lfm2Config", "Lfm2ForCausalLM", {}),
    "falcon_h1": ("FalconH1Config", "FalconH1ForCausalLM", {"head_dim": 16}),
    "jamba": ("JambaConfig", "JambaForCausalLM", {"num_experts": 2}),
    "llama4": ("Llama4TextConfig", "Llama4ForCausalLM", {"num_local_experts": 2, "head_dim": 16,
                                                         "intermediate_size_mlp": 128}),
    "minicpm3": ("MiniCPM3Config", "MiniCPM3ForCausalLM", {
        "head_dim": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "kv_lora_rank": 16, "q_lora_rank": 16,
        "v_head_dim": 16, "num_key_value_heads": 4}),
    "hunyuan_v1_moe": ("HunYuanMoEV1Config", "HunYuanMoEV1ForCausalLM", {"head_dim": 16, "num_experts": 4,
                                                                         "moe_topk": 2}),
    "ernie4_5_moe": ("Ernie4_5_MoeConfig", "Ernie4_5_MoeForCausalLM", {"moe_num_experts": 4, "moe_k": 2,
                                                                       "moe_intermediate_size": 32, "head_dim": 16}),
    "phimoe": ("PhimoeConfig", "PhimoeForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2}),
    "doge": ("DogeConfig", "DogeForCausalLM", {}),
    "flex_olmo": ("FlexOlmoConfig", "FlexOlmoForCausalLM", {"num_experts": 4, "num_experts_per_tok": 2}),
    "bamba": ("BambaConfig", "BambaForCausalLM", {}),
    "nemotron_h": ("NemotronHConfig", "NemotronHForCausalLM", {}),
    "phi": ("PhiConfig", "PhiForCausalLM", {}),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),
}


def head_gap(base) -> float:
    """max |logits - head(final states)| / max |logits| on six tokens."""
    ids = torch.arange(6)[None]
    with torch.no_grad():
        logits = base(input_ids=ids).logits.float()
        raw = base.get_output_embeddings()(base_decoder_stack(base)(input_ids=ids).last_hidden_state).float()
    return float((logits - raw).abs().max() / logits.abs().max())


def probe(family: str, tokenizer) -> list[str]:
    where = "tests (lean)" if family in helpers.FAMILIES else "probed" if family in PROBED else "tests (own layers)"
    try:
        gap = f"{head_gap(tiny_base(family)):.3f}"
    except Exception as e:  # (a family whose stack is not Llama-style has no `.layers` to read)
        gap = f"- ({type(e).__name__})"
    try:
        model = tiny_hamburger(family)
    except HamburgerError as e:
        return [family, where, "refused: " + str(e).split(" (")[0].split(";")[0], "", "", "", gap]
    except Exception as e:
        return [family, where, f"**error** {type(e).__name__}: {str(e)[:90]}", "", "", "", gap]
    greedy = sum(generate(model, tokenizer, p, DecodingConfig(max_new_tokens=16, confidence=1.0)).token_ids
                 == hf_greedy(model.base, p, 16) for p in PROMPTS[:2])
    try:
        assert_engine_matches_training_forward(tiny_hamburger(family, seed=3), tokenizer)
        merged = "yes"
    except AssertionError as e:
        merged = ("(no merged group in its random decode)" if "needs merged groups" in str(e)
                  else f"**no** ({type(e).__name__})")
    except Exception as e:
        merged = f"**no** ({type(e).__name__})"
        traceback.print_exc(file=sys.stderr)
    lean = LeanStack.for_stack(base_decoder_stack(model.base)) is not None
    return [family, where, "yes", f"{greedy} of 2", merged, "yes" if lean else "no", gap]


def main():
    helpers.OWN_LAYER_FAMILIES.update({k: v for k, v in PROBED.items() if hasattr(transformers, v[0])})  # (tiny_base
    # reads them there)
    tokenizer = make_char_tokenizer()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}\n")
    print("| family | where | grafts | confidence 1.0 = base greedy | merged decode = training forward | lean pass "
          "| logits vs raw head (relative) |")
    print("|---|---|---|---|---|---|---|")
    names = [f for f in helpers.FAMILIES if f != "llama-eager"] + list(helpers.OWN_LAYER_FAMILIES)
    for family in names:
        print("| " + " | ".join(probe(family, tokenizer)) + " |", flush=True)


if __name__ == "__main__":
    main()
