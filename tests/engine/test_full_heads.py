"""Full heads (`engine/full_heads.py`): with a fold, chosen (layer, key/value head) pairs keep every slot it takes
out; the others read the fold. The reference is the folded layout's uncached forward with those heads seeing every
earlier slot; every head full is lossless verify; the bytes are measured."""

import pytest
import torch

from hamburger.core.checkpoint import load_checkpoint
from hamburger.core.config import HamburgerConfig
from hamburger.engine import cache as cache_module
from hamburger.engine.cache import cache_bytes
from hamburger.engine.full_heads import FullHeadCache, parse_full_heads
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy, save_tiny_checkpoint
from tests.verify_helpers import FOLDINGS, fed_groups, fold_schedule, folded_reference_logits, folding_model

HEAD_SETS = {"one": [(1, 0)], "two layers": [(0, 1), (3, 0)], "a whole layer": [(2, 0), (2, 1)]}


def every_head(model) -> list[tuple[int, int]]:
    config = model.base.config
    return [(layer, g) for layer in range(config.num_hidden_layers) for g in range(config.num_key_value_heads)]


@pytest.mark.parametrize("heads", list(HEAD_SETS))
@pytest.mark.parametrize("name, family", [("segments 6", "llama"), ("segments 2, keep first", "llama"),
                                          ("segments 2, keep first", "qwen2"), ("forwards 0, keep last", "llama"),
                                          ("segments 2, keep none", "llama"), ("segments 2, keep first", "qwen3"),
                                          ("segments 2, keep first", "gemma3")])
def test_logits_are_the_folded_layouts_with_full_heads(heads, name, family, char_tokenizer):
    """The engine's logits are the folded layout's where the full heads see every earlier slot (merged slots too),
    and a row's KV slots are its folded slots plus, weighed by the full heads' share of a slot, the ones only they
    keep."""
    model, folding, full = folding_model(family), FOLDINGS[name], HEAD_SETS[heads]
    share = len(full) / len(every_head(model))
    folded = 0
    for prompt in PROMPTS:
        run = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=40, confidence=0.2,
                                                                             ignore_eos=True), fold=folding,
                               trace_logits=True, full_heads=full)
        res = run.run()[0]
        fed, traced = fed_groups(res), torch.stack(run.logits[0])
        schedule = fold_schedule(folding, model.base.config.vocab_size, traced, fed)
        want = folded_reference_logits(model, prompt, res.token_ids, fed, schedule, folding.keep, full=full)
        torch.testing.assert_close(traced, want, rtol=1e-4, atol=1e-4)
        assert res.token_ids == want.argmax(-1).tolist()
        left = sum(e - s - (folding.keep != "none") for groups in schedule for s, e in groups)
        merged = sum(len(groups) for groups in schedule) if folding.keep == "merged" else 0
        whole = len(prompt) + sum(fed) + merged  # what the full heads hold
        assert res.kv_slots == round(len(prompt) + sum(fed) - left + (whole - (len(prompt) + sum(fed) - left)) * share)
        folded += sum(map(len, schedule))
    assert folded > 4, "the test needs folded groups"


def test_the_full_heads_change_the_reading(char_tokenizer):
    """(So the test above can fail:) the same answer read with and without full heads gives other logits."""
    model, folding = folding_model("llama"), FOLDINGS["segments 2, keep first"]
    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=40, confidence=0.2,
                                                                                ignore_eos=True), fold=folding,
                           trace_logits=True, full_heads=HEAD_SETS["two layers"])
    res = run.run()[0]
    fed, traced = fed_groups(res), torch.stack(run.logits[0])
    schedule = fold_schedule(folding, model.base.config.vocab_size, traced, fed)
    plain = folded_reference_logits(model, PROMPTS[0], res.token_ids, fed, schedule, folding.keep)
    assert (traced - plain).abs().max() > 1e-2


@pytest.mark.parametrize("name", ["segments 2, keep first", "forwards 0, keep last", "segments 2, keep none"])
def test_every_head_full_is_lossless_verify(name, char_tokenizer):
    """Folds that feed no merged slot, every head full: the base's greedy output, token for token, and lossless
    verify's logits and KV."""
    model = folding_model("llama")
    for prompt in PROMPTS:
        cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
        runs = [VerifyGeneration(model, char_tokenizer, [prompt], cfg, trace_logits=True, **kw)
                for kw in ({}, {"fold": FOLDINGS[name], "full_heads": every_head(model)})]
        lossless, full = (run.run()[0] for run in runs)
        assert full.token_ids == lossless.token_ids == hf_greedy(model.base, prompt, 40)
        assert (full.accepted, full.kv_slots, full.kv_bytes) == (lossless.accepted, lossless.kv_slots,
                                                                 lossless.kv_bytes)
        torch.testing.assert_close(torch.stack(runs[1].logits[0]), torch.stack(runs[0].logits[0]), rtol=0, atol=1e-5)


def test_no_full_heads_is_the_plain_fold(char_tokenizer):
    model, folding = folding_model("llama"), FOLDINGS["segments 6"]
    cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
    model.config.full_heads = [[1, 0]]  # (the model's own heads, overridden by none)
    a = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=folding, full_heads=[]).run()[0]
    model.config.full_heads = []
    b = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=folding).run()[0]
    assert (a.token_ids, a.accepted, a.kv_slots, a.kv_bytes) == (b.token_ids, b.accepted, b.kv_slots, b.kv_bytes)


@pytest.mark.parametrize("compact_at", [0.0, 0.25, 2.0])
@pytest.mark.parametrize("sample", [False, True])
def test_ragged_batch_equals_single_runs(compact_at, sample, char_tokenizer, monkeypatch):
    """Rows that fold at different forwards, keep different numbers of drafts, end at different lengths and join a
    running batch (the cache and the store compacted always, when holes pile up, never): each row gives what it
    gives alone, greedy and sampled with a seed."""
    monkeypatch.setattr(cache_module, "COMPACT_AT", compact_at)
    model = folding_model("llama")
    torch.manual_seed(0)
    with torch.no_grad():  # (wrong drafts as well as right ones)
        for p in model.decoder.parameters():
            p.add_(0.05 * torch.randn_like(p))
    sampling = {"temperature": 1.2, "seed": 5} if sample else {}
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.2, ignore_eos=True, **sampling) for n in (40, 13, 29)]
    kw = {"fold": FOLDINGS["segments 6"], "full_heads": HEAD_SETS["two layers"]}
    run = VerifyGeneration(model, char_tokenizer, PROMPTS[:2], cfgs[:2], **kw)
    events = iter(run)
    for _ in range(3):  # the third row joins the running batch
        next(events)
    run.add(PROMPTS[2], cfgs[2])
    list(events)
    batch = run.results
    for prompt, cfg, res in zip(PROMPTS, cfgs, batch):
        alone = VerifyGeneration(model, char_tokenizer, [prompt], cfg, **kw).run()[0]
        assert (res.token_ids, res.accepted, res.kv_slots) == (alone.token_ids, alone.accepted, alone.kv_slots)
        assert res.tokens == cfg.max_new_tokens
    assert any(a < d for r in batch for a, d in zip(r.accepted, r.drafts)), "the test needs rejections"
    assert sum(r.kv_slots < r.kv_slots_ordinary for r in batch) >= 2, "the test needs folds"


def test_the_bytes_are_measured(char_tokenizer):
    """The cache holds the other heads of a split layer, the store the full ones: the bytes are their tensors', and
    lie between the plain fold's and lossless verify's."""
    model, folding = folding_model("llama"), FOLDINGS["segments 2, keep first"]
    cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
    peaks = []
    for kw in ({"fold": folding}, {"fold": folding, "full_heads": HEAD_SETS["two layers"]}, {}):
        run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, **kw)
        res = run.run()[0]
        peaks.append((res.kv_bytes, run.peak_kv_bytes))
    assert peaks[0] < peaks[1] < peaks[2]
    cache = FullHeadCache(model.base.config, 2, heads=HEAD_SETS["two layers"])
    cache.extend(torch.ones(2, 5, dtype=torch.bool))
    head_dim = model.base.config.hidden_size // model.base.config.num_attention_heads
    k = torch.randn(2, model.base.config.num_key_value_heads, 5, head_dim)
    for layer in range(model.base.config.num_hidden_layers):  # (what a forward writes)
        if layer in cache.splits:
            split = cache.splits[layer]
            cache.store.kv.layers[split.position].update(k[:, split.full], k[:, split.full])
            cache.kv.update(k[:, split.rest], k[:, split.rest], layer)
        else:
            cache.kv.update(k, k, layer)
    whole = 2 * 2 * 5 * k.shape[1] * head_dim * 4 * model.base.config.num_hidden_layers  # rows, k and v, fp32
    assert cache.kv_bytes() == cache_bytes(cache.kv)[0] + cache_bytes(cache.store.kv)[0] == whole
    assert cache.bytes_per_slot() * 2 * 5 == whole


def test_bad_full_heads_are_refused(char_tokenizer):
    model, cfg = folding_model("llama"), DecodingConfig()
    for heads, match in [([(4, 0)], "out of range"), ([(0, 2)], "out of range"), ([(0, -1)], "out of range"),
                         ([(1, 0), (1, 0)], "repeat"), ([(1,)], "pair"), ([(1.0, 0)], "pair")]:
        with pytest.raises(HamburgerError, match=match):
            VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=FOLDINGS["segments 6"], full_heads=heads)
    model.lean = False  # (transformers' modules cannot split a layer by head)
    with pytest.raises(HamburgerError, match="full heads need the lean pass"):
        VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=FOLDINGS["segments 6"],
                         full_heads=[(1, 0)]).run()
    with pytest.raises(HamburgerError, match="LAYER:HEAD"):
        parse_full_heads("1-0")
    assert parse_full_heads("none") == [] and parse_full_heads("3:1, 0:2") == [(3, 1), (0, 2)]
    with pytest.raises(HamburgerError, match="out of range"):
        HamburgerConfig(full_heads=[[9, 0]]).for_base(model.base.config)


def test_a_checkpoints_full_heads_are_its_folds_default(tmp_path, char_tokenizer):
    """Saved in the checkpoint's config (sorted), read back, and used by every fold unless a run says otherwise;
    lossless verify keeps nothing (it folds nothing)."""
    model = folding_model("llama")
    model.config.full_heads = [[3, 0], [0, 1]]
    model.config.for_base(model.base.config)
    assert model.config.full_heads == [[0, 1], [3, 0]]
    loaded = load_checkpoint(save_tiny_checkpoint(tmp_path, char_tokenizer, model))[0]
    assert loaded.config.full_heads == [[0, 1], [3, 0]]
    cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
    runs = [VerifyGeneration(loaded, char_tokenizer, [PROMPTS[0]], cfg, fold=FOLDINGS["segments 6"], **kw).run()[0]
            for kw in ({}, {"full_heads": HEAD_SETS["two layers"]}, {"full_heads": []})]
    assert runs[0].token_ids == runs[1].token_ids and runs[0].kv_slots == runs[1].kv_slots > runs[2].kv_slots
    assert VerifyGeneration(loaded, char_tokenizer, [PROMPTS[0]], cfg).full_heads == []


def test_a_prompt_prefilled_in_chunks_is_the_same(char_tokenizer):
    """(The server prefills long prompts in chunks): the store gets every chunk's slots as the cache does."""
    model, folding = folding_model("llama"), FOLDINGS["segments 6"]
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.2, ignore_eos=True)
    whole, chunked = (VerifyGeneration(model, char_tokenizer, PROMPTS, cfg, fold=folding, prefill_chunk=chunk,
                                       full_heads=HEAD_SETS["two layers"]).run() for chunk in (None, 3))
    assert [(r.token_ids, r.kv_slots) for r in whole] == [(r.token_ids, r.kv_slots) for r in chunked]
    assert max(map(len, PROMPTS)) > 3
