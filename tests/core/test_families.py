"""The engine's two equalities on tiny random bases of the families users convert, and what it refuses.

Each family is built by transformers itself (`tests.helpers.FAMILIES`): its own norms, attention and rotary code. At
confidence 1.0 the decode is the base's own greedy decode, and a decode with merges gives, token by token, the logits
of the teacher-forced training forward over its groups.
"""

import pytest
import torch

from hamburger.core.config import HamburgerConfig
from hamburger.core.final_logits import FinalLogits
from hamburger.core.lean import LeanStack
from hamburger.core.masks import as_read_by
from hamburger.core.model import HamburgerModel
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import (FAMILIES, OWN_LAYER_FAMILIES, PROMPTS, assert_engine_matches_training_forward, hf_greedy,
                           tiny_base, tiny_hamburger)

# (llama and qwen2 run in every engine test)
OTHER_FAMILIES = [f for f in FAMILIES if f not in ("llama", "qwen2")] + list(OWN_LAYER_FAMILIES)


@pytest.mark.parametrize("family", OTHER_FAMILIES)
def test_confidence_one_equals_base_greedy(family, char_tokenizer):
    model = tiny_hamburger(family)
    for prompt in PROMPTS:
        res = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=24, confidence=1.0))
        assert res.token_ids == hf_greedy(model.base, prompt, 24)


@pytest.mark.parametrize("family,lean", [(f, True) for f in OTHER_FAMILIES] + [
    (f, False) for f in ("qwen3", "gemma3", "mistral-sliding", "olmo2")])
def test_incremental_logits_equal_training_forward(family, lean, char_tokenizer):
    """On the lean pass where the family has one, and on transformers' own layers (``lean`` off)."""
    model = tiny_hamburger(family, seed=3)
    model.lean = lean
    assert_engine_matches_training_forward(model, char_tokenizer)


def test_eager_attention_reads_additive_masks():
    mask = torch.tensor([[[[True, False], [True, True]]]])
    additive = as_read_by(mask, "eager", torch.bfloat16)
    assert additive.dtype == torch.bfloat16
    assert additive.tolist() == [[[[0.0, torch.finfo(torch.bfloat16).min], [0.0, 0.0]]]]
    assert as_read_by(mask, "sdpa", torch.float32) is mask
    assert as_read_by(additive, "eager", torch.float32) is additive


@pytest.mark.parametrize("family,settings", [(f, {}) for f in FAMILIES] + [("phi3", {"partial_rotary_factor": 0.5})])
def test_the_lean_pass_serves_every_family_with_its_parts(family, settings):
    """The lean forward runs every family (its build-time check passes, at positions far apart), and the engine's
    equalities above hold on it: eager attention given additive masks, SmolLM3's last layer and EXAONE 4's
    full-attention layer left unrotated, Qwen3's and Gemma 3's head-by-head query and key norms and OLMo 2's
    whole-width ones, the norms Gemma 2 and 3 and HyperCLOVAX put after each block and OLMo 2 and EXAONE 4 put there
    instead of before it, Gemma 2's capped scores, Gemma 3's rotation per layer type, Phi-3's fused projections and its
    rotation of part of each head (Phi-4-mini's), StableLM's LayerNorms and its rotation of part of each head (whose
    `apply_rotary_pos_emb` takes the rotated channels only), Granite's multipliers, Cohere's attention and MLP side by
    side, Arcee's MLP without a gate, VaultGemma's norms, Hunyuan's query and key norms after the rotation, mixtures of
    experts (each runs its own forward: Mixtral's, Qwen3-MoE's, GLM-4.5's after its dense first layer, Granite MoE's
    named otherwise, gpt-oss's), gpt-oss's attention sinks (its own eager attention reads them), and a mask per layer
    type where some layers slide."""
    assert LeanStack.for_stack(base_decoder_stack(tiny_base(family, **settings))) is not None


@pytest.mark.parametrize("family", OWN_LAYER_FAMILIES)
def test_the_lean_pass_leaves_families_it_does_not_know_to_transformers(family):
    """Families with parts the pass does not run (DeepSeek's latent attention) keep transformers' layers: the
    equalities above hold for them on that path."""
    assert LeanStack.for_stack(base_decoder_stack(tiny_base(family))) is None


@pytest.mark.parametrize("family", ["glm4moe", "deepseek_v3"])
def test_the_micro_step_decoder_copies_layers_built_by_index(family):
    """Families whose layers differ by index (a dense first layer, experts after): each layer of the micro-step decoder
    is built as the base layer it copies, so it copies it exactly, and is numbered from 0 for its own cache."""
    model = tiny_hamburger(family, decoder_layers=2)
    layers, theirs = model.decoder.layers, base_decoder_stack(model.base).layers[-2:]
    assert type(base_decoder_stack(model.base).layers[0].mlp) is not type(theirs[-1].mlp)
    for mine, base_layer in zip(layers, theirs, strict=True):
        assert type(mine.mlp) is type(base_layer.mlp)
        assert all(torch.equal(a, b) for a, b in zip(mine.state_dict().values(), base_layer.state_dict().values(),
                                                     strict=True))
    assert [layer.self_attn.layer_idx for layer in layers] == [0, 1]


@pytest.mark.parametrize("family,breaks", [("qwen3", "key norms"), ("olmo2", "key norms"), ("olmo2", "block norms"),
                                           ("gemma3", "block norms"), ("gemma3", "rotation by layer type"),
                                           ("gemma2", "score cap"), ("granite", "residual multiplier"),
                                           ("granite", "embedding multiplier"), ("cohere", "parallel blocks"),
                                           ("exaone4", "rotation everywhere"), ("smollm3", "rotation everywhere"),
                                           ("mixtral", "experts"), ("hunyuan", "key norms after rotation")])
def test_the_lean_pass_build_check_fails_without_each_part(family, breaks):
    """(So the check above can fail:) a lean pass that skips one of a family's parts disagrees with transformers'."""
    settings = {"attn_logit_softcapping": 0.01} if breaks == "score cap" else {}  # (random scores are small)
    stack = base_decoder_stack(tiny_base(family, **settings))
    if breaks == "key norms after rotation":  # (norms of weight 1 commute with a rotation: not these)
        with torch.no_grad():
            for layer in stack.layers:
                for norm in (layer.self_attn.query_layernorm, layer.self_attn.key_layernorm):
                    norm.weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(0))
    lean = LeanStack(stack)
    assert lean.agrees()
    if breaks == "embedding multiplier":
        lean.input_scale = 1.0
    for layer in lean.layers:
        if breaks == "residual multiplier":
            layer.residual = 1.0
        elif breaks == "parallel blocks":
            layer.parallel = False
        elif breaks == "rotation everywhere":
            layer.rope = True
        elif breaks == "key norms":
            layer.key_norms, layer.key_norms_at = None, None
        elif breaks == "key norms after rotation":
            layer.key_norms_at = "heads"
        elif breaks == "block norms":
            layer.norms = (layer.norms[0], None, layer.norms[2], None)
        elif breaks == "rotation by layer type":
            layer.kind = "full_attention"
        elif breaks == "score cap":
            layer.score_cap = None
        elif breaks == "experts":  # (each layer's experts left out)
            layer.mlp = torch.zeros_like
    assert not lean.agrees()


def test_attention_that_reads_no_mask_is_refused():
    base = tiny_base("llama")
    base.config._attn_implementation = "flash_attention_2"
    with pytest.raises(HamburgerError, match="flash_attention_2"):
        HamburgerModel(base, HamburgerConfig(max_steps=4))


@pytest.mark.parametrize("family,settings", [("llama", {}), ("llama-eager", {}), ("gemma2", {}),
                                             ("gemma2", {"final_logit_softcapping": 0.1})])
def test_kl_teacher_is_the_base_own_forward(family, settings):
    """The KL teacher (the unmerged base over [prompt, response], right-padded rows) gives at each response token the
    logits of the base's own forward over that row alone (capped where the base caps them)."""
    from hamburger.core.packing import TrainBatch

    model = tiny_hamburger(family, base_settings=settings)
    prompts, responses = [[1, 5, 6], [1, 7]], [[8, 9, 10, 11], [12, 13, 14]]
    teacher = model.teacher_states(TrainBatch(prompts, responses, [[1] * len(r) for r in responses]))
    with torch.no_grad():
        expected = [model.base(torch.tensor([p + r])).logits[0, len(p) - 1:-1] for p, r in zip(prompts, responses)]
    torch.testing.assert_close(teacher.logits(), torch.cat(expected).float(), rtol=1e-4, atol=1e-4)


SLIDING = ["mistral-sliding", "qwen2-sliding", "gemma3"]  # (every layer, some layers, with their own rotary)


def test_sliding_layers_hide_keys_a_window_of_positions_back():
    """Transformers' rule (a key is seen while query - key < W) on positions, not slots: after a merged slot (at its
    last token's position) a query sees fewer slots, never a key W or more positions back; full layers see all."""
    from hamburger.core.masks import by_layer_type, slot_mask

    config = tiny_base("qwen2-sliding").config  # W = 8, layers 2 and 3 slide
    positions = torch.tensor([[0, 1, 4, 7, 8, 9, 12]])  # slots 2, 3 and 6 merge 3, 3 and 3 tokens
    mask = slot_mask(torch.ones(1, 7, dtype=torch.bool))
    masks = by_layer_type(mask, config, positions, positions)
    assert masks["full_attention"] is mask
    seen = masks["sliding_attention"][0, 0].int().tolist()
    assert seen == [[1, 0, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0],
                    [0, 1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1]]
    every = by_layer_type(mask, tiny_base("mistral-sliding").config, positions, positions)
    assert torch.equal(every, masks["sliding_attention"])
    assert by_layer_type(mask, tiny_base("llama").config, positions, positions) is mask


@pytest.mark.parametrize("family", SLIDING)
def test_sliding_window_bases_batch_and_cache_statically_as_alone(family, char_tokenizer):
    """Rows join a running batch, finish at different times, and decode on a static cache: the same tokens and
    groups as each row alone (the slots' positions follow every move of the cache)."""
    from hamburger.engine.generate import Generation

    model = tiny_hamburger(family, seed=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)  # make long groups likely
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.5) for n in (24, 7, 15)]
    alone = [generate(model, char_tokenizer, p, c) for p, c in zip(PROMPTS, cfgs)]
    assert max(g for r in alone for g in r.groups) > 1
    run = Generation(model, char_tokenizer, PROMPTS[:1], cfgs[0])
    for n, _ in enumerate(run):
        if n == 2:
            run.add(PROMPTS[1], cfgs[1]), run.add(PROMPTS[2], cfgs[2])
    static = Generation(model, char_tokenizer, PROMPTS, cfgs, static_cache=True).run()
    for one, joined, held in zip(alone, run.results, static):
        assert (joined.token_ids, joined.groups) == (held.token_ids, held.groups) == (one.token_ids, one.groups)


@pytest.mark.parametrize("family", SLIDING)
def test_sliding_window_bases_verify_losslessly(family, char_tokenizer):
    """Verify mode, drafts mostly wrong (rolled back), a ragged batch: each row is the base's greedy decode."""
    from hamburger.engine.verify import VerifyGeneration

    model = tiny_hamburger(family, seed=3, decoder_init="random")
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.2) for n in (30, 9, 21)]
    for prompt, cfg, res in zip(PROMPTS, cfgs, VerifyGeneration(model, char_tokenizer, PROMPTS, cfgs).run()):
        assert res.token_ids == hf_greedy(model.base, prompt, cfg.max_new_tokens)


CAPPED = {"final_logit_softcapping": 0.1}  # (Gemma 2's own cap is 30; random logits are small)
# What causal LMs do to their head's output (`FinalLogits`), with the scale each must be found to apply: Gemma 2's
# cap, Granite's division by its `logits_scaling` (8), Cohere's `logit_scale` (1/16), and HyperCLOVAX, which
# multiplies by its `logits_scaling` (4) where Granite divides (`tests.helpers`' settings).
TRANSFORMED = [("gemma2", CAPPED, 1.0), ("granite", {}, 0.125), ("cohere", {}, 0.0625), ("hyperclovax", {}, 4.0)]
TRANSFORMED_IDS = [family for family, _, _ in TRANSFORMED]


def _base_logits(base, prompt, tokens):
    """The base's own logits (its causal LM applies its cap) before each of ``tokens`` after ``prompt``."""
    with torch.no_grad():
        return base(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1:-1].float()


def _head_output(base, ids):
    """The base's LM head on its stack's final states, as the head gives it (before anything its causal LM adds)."""
    with torch.no_grad():
        return base.lm_head(base.model(torch.tensor([ids])).last_hidden_state)[0].float()


@pytest.mark.parametrize("family,settings,scale", TRANSFORMED, ids=TRANSFORMED_IDS)
def test_final_logits_are_the_base_own_in_decoding(family, settings, scale, char_tokenizer):
    """The engine's logits at confidence 1.0 are the causal LM's, whatever it does after its head (found on the base,
    `FinalLogits`), and the head's own output is not (so the equality can fail)."""
    model = tiny_hamburger(family, seed=3, base_settings=settings)
    assert model.final_logits == FinalLogits(scale, settings.get("final_logit_softcapping"))
    for prompt in PROMPTS:
        run = Generation(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=12, confidence=1.0),
                         trace_logits=True)
        res = run.run()[0]
        assert res.token_ids == hf_greedy(model.base, prompt, 12)
        traced, expected = torch.stack(run.logits[0]).float(), _base_logits(model.base, prompt, res.token_ids)
        torch.testing.assert_close(traced, expected, rtol=1e-4, atol=1e-5)
        plain = _head_output(model.base, prompt + res.token_ids)[len(prompt) - 1:-1]
        assert not torch.allclose(plain, expected, atol=1e-3)
    if "final_logit_softcapping" in settings:
        assert traced.abs().max() <= settings["final_logit_softcapping"]


@pytest.mark.parametrize("chunk", [0, 3])
@pytest.mark.parametrize("family,settings,scale", TRANSFORMED, ids=TRANSFORMED_IDS)
def test_final_logits_are_the_base_own_in_training(family, settings, scale, chunk):
    """Without merges the training forward's logits and losses are the causal LM's, all at once and by chunks, and
    the KL to the (equally transformed) teacher is zero."""
    import torch.nn.functional as F

    from hamburger.core.packing import TrainBatch

    model = tiny_hamburger(family, seed=3, base_settings=settings)
    model.loss_chunk = chunk
    prompt, response = [1, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14]
    batch = TrainBatch([prompt], [response], [[1] * len(response)])
    expected = _base_logits(model.base, prompt, response)
    with torch.no_grad():
        out = model.training_forward(batch, teacher=model.teacher_states(batch))
    if not chunk:
        torch.testing.assert_close(out.token_logits, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(out.token_loss, F.cross_entropy(expected, torch.tensor(response)), rtol=1e-4,
                               atol=1e-5)
    assert abs(float(out.kl)) < 1e-5


@pytest.mark.parametrize("family,settings,scale", TRANSFORMED, ids=TRANSFORMED_IDS)
def test_drafts_over_a_draft_vocabulary_are_drawn_as_over_the_whole_head(family, settings, scale, char_tokenizer):
    """verify's draft head multiplies only the draft vocabulary's rows of the LM head: a sampled draft's
    distribution is the whole (transformed) head's, renormalised over those tokens."""
    from hamburger.engine.verify import VerifyGeneration

    model = tiny_hamburger(family, seed=3, base_settings=settings)
    vocab = torch.tensor([4, 7, 40, 41, 60])
    cfg = DecodingConfig(max_new_tokens=8, temperature=1.0, seed=0)
    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, draft_vocab=vocab)
    hidden = torch.randn(1, 64, generator=torch.Generator().manual_seed(0))
    _, (q,) = run._draw_drafts(hidden, [cfg], [torch.Generator().manual_seed(0)])
    whole = model.decode_logits(hidden).float()[0]
    torch.testing.assert_close(q[vocab], whole[vocab].softmax(-1), rtol=1e-5, atol=1e-6)
    assert q.sum().item() == pytest.approx(1.0) and not torch.allclose(
        q[vocab], model.base.lm_head(hidden)[0, vocab].float().softmax(-1), atol=1e-4)


def test_a_base_whose_logits_are_not_its_head_s_in_a_known_way_is_refused():
    """A causal LM that scales its logits by a factor no config value names: refused, not decoded wrongly."""
    import transformers

    class Tripled(transformers.LlamaForCausalLM):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 3
            return out

    base = Tripled(tiny_base("llama").config).eval()
    with pytest.raises(HamburgerError, match="changes its LM head's output in a way HAMburger does not know"):
        HamburgerModel(base, HamburgerConfig(max_steps=4))


@pytest.mark.parametrize("config_class,model_class,settings", [
    ("Qwen3NextConfig", "Qwen3NextForCausalLM", {"head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2,
                                                 "moe_intermediate_size": 32}),
    ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2})])
def test_a_base_with_recurrent_layers_is_refused(config_class, model_class, settings):
    """Layers that keep a recurrent state (linear attention, Mamba) have no keys and values to store per group."""
    import transformers

    config = getattr(transformers, config_class)(vocab_size=100, hidden_size=64, num_hidden_layers=4,
                                                 num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
                                                 **settings)
    with pytest.raises(HamburgerError, match=f"{model_class} keeps state that is not keys and values per position"):
        HamburgerModel(getattr(transformers, model_class)(config), HamburgerConfig(max_steps=4))


def test_a_multimodal_gemma3_loads_as_its_text_causal_lm(tmp_path, char_tokenizer):
    """Gemma 3 from 4B up is a vision-language wrapper, which transformers loads as a causal LM: `load_base` gives its
    text model's causal-LM class over the same language model and LM head, whose logits and greedy decode (through
    the engine at confidence 1.0) are the wrapper's on text."""
    import transformers

    from hamburger.core.base import load_base

    text = dict(tiny_base("gemma3").config.to_dict(), head_dim=16)
    config = transformers.Gemma3Config(
        text_config={k: v for k, v in text.items() if k not in ("architectures", "model_type", "transformers_version")},
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                           image_size=28, patch_size=14),
        mm_tokens_per_image=4, image_token_index=99, boi_token_index=97, eoi_token_index=98)
    torch.manual_seed(0)
    wrapper = transformers.Gemma3ForConditionalGeneration(config).eval()
    wrapper.save_pretrained(tmp_path)
    char_tokenizer.save_pretrained(tmp_path)
    with pytest.raises(HamburgerError, match="needs a decoder stack"):
        HamburgerModel(wrapper, HamburgerConfig(max_steps=4))
    base, _, _ = load_base(str(tmp_path))
    assert type(base).__name__ == "Gemma3ForCausalLM" and not any(p.is_meta for p in base.parameters())
    assert sum(p.numel() for p in base.parameters()) < sum(p.numel() for p in wrapper.parameters())  # (no vision)
    prompt = [1, 5, 6, 7]
    with torch.no_grad():
        torch.testing.assert_close(base(torch.tensor([prompt])).logits, wrapper(torch.tensor([prompt])).logits)
    model = HamburgerModel(base, HamburgerConfig(max_steps=4)).eval()
    decoded = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=12, confidence=1.0))
    assert decoded.token_ids == hf_greedy(wrapper, prompt, 12)


def test_stack_without_llama_parts_is_refused():
    import transformers

    config = transformers.GPTNeoXConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=128)
    with pytest.raises(HamburgerError, match="GPTNeoXForCausalLM: HAMburger needs a decoder stack"):
        HamburgerModel(transformers.GPTNeoXForCausalLM(config), HamburgerConfig(max_steps=4))


@pytest.mark.parametrize("family", SLIDING)
def test_sliding_window_training_forwards_after_given_prompt_states_are_the_same(family):
    """Training runs the prompts once and the merged slots after their cached states: with windows that reach back
    into the prompts, the same logits as the whole forward, for the merged model and the KL teacher alike."""
    from hamburger.core.packing import TrainBatch

    model = tiny_hamburger(family, seed=3)
    batch = TrainBatch([[1, *range(40, 49)], [1, 50, 51]], [list(range(10, 21)), list(range(20, 27))],
                       [[3, 1, 2, 1, 4], [2, 2, 1, 2]])
    with torch.no_grad():
        prompt = model.prompt_states(batch)
        whole, reused = model.training_forward(batch), model.training_forward(batch, prompt=prompt)
        teacher, teacher_reused = model.teacher_states(batch), model.teacher_states(batch, prompt)
    torch.testing.assert_close(reused.token_logits, whole.token_logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(teacher_reused.logits(), teacher.logits(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family,settings,chunk", [("gemma3", {}, 0), ("gemma2", CAPPED, 5)])
def test_a_sliding_window_base_trains_saves_and_decodes(family, settings, chunk, tmp_path, char_tokenizer):
    """Conversion end to end on a sliding-window family (Gemma 2's capped logits, their losses by chunks): LoRA at
    merged slots plus KL (prompts run once), a checkpoint, and its decodes (the base's greedy one at confidence 1.0)."""
    from hamburger.core.checkpoint import load_checkpoint
    from hamburger.train.config import TrainConfig
    from hamburger.train.trainer import Trainer
    from tests.helpers import write_dataset

    tiny_base(family, **settings).save_pretrained(tmp_path / "base")
    char_tokenizer.save_pretrained(tmp_path / "base")
    data = write_dataset(tmp_path / "data.jsonl", char_tokenizer)
    run = tmp_path / "run"
    trainer = Trainer(TrainConfig.from_dict(dict(
        base=str(tmp_path / "base"), data=str(data), out=str(run), batch_size=8, max_train_steps=4, warmup_steps=1,
        threads=1, progress=False, save_every=0, decoder_layers=1, lora_r=4, base_mode="lora", lora_scope="merged",
        kl_weight=0.5, loss_chunk=chunk)))
    assert trainer.model.reuse_prompt and not trainer.model.prompt_trains()
    assert trainer.model.final_logits.cap == settings.get("final_logit_softcapping")
    assert trainer.train() == 0
    model, _, _ = load_checkpoint(run / "last")
    assert model.final_logits == trainer.model.final_logits
    prompt = [1, *range(40, 50)]
    merged = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=16, confidence=0.1))
    assert merged.tokens == 16 and merged.kv_slots < merged.kv_slots_ordinary
    plain = generate(model, char_tokenizer, prompt, DecodingConfig(max_new_tokens=16, confidence=1.0))
    assert plain.token_ids == hf_greedy(model.base, prompt, 16)


def verify_fold_run(model, tokenizer, spec: str | None = None, **kw):
    from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
    from hamburger.engine.verify import VerifyGeneration

    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.3, ignore_eos=True) for n in (90, 70, 80)]
    return VerifyGeneration(model, tokenizer, PROMPTS, cfgs, fold=parse_folding(spec or DEFAULT_FOLD), **kw)


def test_the_history_store_read_through_transformers_layers_is_the_lean_pass_own(char_tokenizer):
    """verify_fold's default (older history at 8/4 bits, channels turned) on transformers' own layers, where a base
    has no lean pass: on a Llama base that has one, the same tokens, and logits equal up to rounding, either way."""
    runs = []
    for lean in (True, False):
        model = tiny_hamburger("llama", seed=3)
        model.lean = lean
        run = verify_fold_run(model, char_tokenizer, trace_logits=True)
        runs.append((run.run(), run.logits))
    (lean, lean_logits), (through, through_logits) = runs
    assert all(r.kv_slots < r.kv_slots_ordinary for r in lean)  # (the store holds history)
    for a, b, la, lb in zip(lean, through, lean_logits, through_logits):
        assert (a.token_ids, a.kv_slots) == (b.token_ids, b.kv_slots)
        torch.testing.assert_close(torch.stack(lb), torch.stack(la), rtol=1e-4, atol=1e-5)


def test_the_history_store_runs_on_transformers_own_layers(char_tokenizer):
    """With the lean pass off (Phi-3's fused projections, Gemma 3's sliding windows), verify_fold's default runs
    through transformers' own layers and stores history (`tests/engine/test_quantized.py` holds it to the rounded
    ordinary cache). Full heads need the pass: the error says so."""
    for family in ("phi3", "gemma3"):
        model = tiny_hamburger(family, seed=3)
        model.lean = False
        assert model._lean_stack() is None
        assert all(r.kv_slots < r.kv_slots_ordinary for r in verify_fold_run(model, char_tokenizer).run())
    with pytest.raises(HamburgerError, match="full heads need the lean pass"):
        verify_fold_run(model, char_tokenizer, "segments:60:0.45:first", full_heads=((1, 0),)).run()


@pytest.mark.parametrize("family,mode", [("qwen3", []), ("gemma3", ["--mode", "hamburger", "--confidence", "0.1"])])
def test_the_cli_decodes_a_checkpoint_of_another_family(family, mode, tmp_path, char_tokenizer, capsys):
    """A checkpoint on a Qwen3 base in the default mode, whose history store then holds
    the answer's older tokens, and one on a Gemma 3 base in the paper's decoding, which merges."""
    import json

    from hamburger.cli.main import main
    from tests.helpers import save_tiny_checkpoint

    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer, tiny_hamburger(family, seed=3))
    assert main(["generate", "--model", str(ckpt), "--raw", "--json", "--max-new-tokens", "80", *mode, "hello"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == 80 and out["kv_slots"] < out["kv_slots_ordinary"]
