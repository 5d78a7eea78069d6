"""Sliding layers forget (`SlotCache.forget`): a slot no later query of any row can see leaves those layers' KV.

The tiny sliding bases slide over 8 positions, so every decode here outgrows the window many times. The equalities:
each mode decodes the same tokens, groups and logits as with a cache that keeps every slot (rows joining a running
batch, holes compacted, groups read again or folded, a quantized history store), while its sliding layers hold
about a window of slots and the row's bytes shrink.
"""

import pytest
import torch

from hamburger.data.segment import SegmentSettings
from hamburger.engine.cache import SlotCache
from hamburger.engine.folding import Folding
from hamburger.engine.generate import Generation
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from tests.helpers import PROMPTS, tiny_base, tiny_hamburger

SLIDING = ["mistral-sliding", "qwen2-sliding", "gemma3"]  # (every layer, the last two, three of four; W = 8)
STORE = Folding(window=3, keep="none", bits=8, value_bits=4, rotate=True, prompt=2,
                segments=SegmentSettings(strategy="decreasing", ratio=1.03))
MODES = {  # mode -> (model settings, engine, its keywords, a request's keywords)
    "hamburger": ({}, Generation, {}, {}),
    "re-read": ({}, Generation, {}, {"reread": 0.9}),
    "folding tail": ({"single_tail": 1, "fold_tail": 2}, Generation, {}, {}),
    "verify": ({}, VerifyGeneration, {}, {}),
    "verify, stored history": ({}, VerifyGeneration, {"fold": STORE}, {}),
}


def decode(family, mode, char_tokenizer, forgets: bool):
    """Three rows, two joining after two steps (after 30 with a store, once the first row's store forgot), ``forgets``
    or not: (results, traced logits, the caches made)."""
    settings, engine, keywords, request = MODES[mode]
    if engine is VerifyGeneration:
        settings = {**settings, "decoder_init": "random"}  # (drafts mostly wrong: rolled back)
    model = tiny_hamburger(family, seed=3, **settings)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)  # long groups at confidence 0.5
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.5, ignore_eos=True, **request) for n in (48, 14, 36)]
    run = engine(model, char_tokenizer, PROMPTS[:1], cfgs[0], trace_logits=True, **keywords)
    caches, make = [], run._new_cache

    def new_cache(*args, **kwargs):
        caches.append(make(*args, **kwargs))
        if not forgets:
            caches[-1].forgetting = []
        return caches[-1]

    run._new_cache = new_cache
    for n, _ in enumerate(run):
        if n == (30 if "fold" in keywords else 2):
            run.add(PROMPTS[1], cfgs[1]), run.add(PROMPTS[2], cfgs[2])
    return run.results, run.logits, caches


@pytest.mark.parametrize("family,mode", [(f, m) for f in SLIDING for m in MODES
                                         if f != "mistral-sliding" or m != "folding tail"])  # (that one: the other two)
def test_forgetting_decodes_what_keeping_every_slot_decodes(family, mode, char_tokenizer):
    kept, kept_logits, _ = decode(family, mode, char_tokenizer, forgets=False)
    forgot, forgot_logits, caches = decode(family, mode, char_tokenizer, forgets=True)
    assert sum(c.forgotten for c in caches) > 0
    if mode == "verify, stored history":
        assert sum(c.store_forgotten for c in caches) > 0
    for row, (a, b) in enumerate(zip(kept, forgot)):
        assert (a.token_ids, a.groups) == (b.token_ids, b.groups)
        torch.testing.assert_close(torch.stack(forgot_logits[row]), torch.stack(kept_logits[row]), rtol=1e-5,
                                   atol=1e-5)
        assert a.kv_slots == b.kv_slots
    assert forgot[0].kv_bytes < kept[0].kv_bytes


@pytest.mark.parametrize("family", SLIDING)
def test_sliding_layers_hold_about_a_window(family):
    """Forty one-token steps on a base of window 8: a forgetting layer holds the window, and at most a window more
    before it forgets; the others hold every slot. Each mask is as wide as the keys its layers read."""
    config = tiny_base(family).config
    cache = SlotCache(config, 1)
    for step in range(40):
        masks = cache.extend(torch.ones(1, 1, dtype=torch.bool), torch.tensor([[step]]))
        for i, layer in enumerate(cache.kv.layers):
            layer.update(torch.randn(1, 2, 1, 16), torch.randn(1, 2, 1, 16))
            mask = masks if not isinstance(masks, dict) else masks[config.layer_types[i]]
            assert mask.shape[-1] == layer.keys.shape[2]
    held = [layer.keys.shape[2] for layer in cache.kv.layers]
    assert all(8 <= held[i] <= 16 for i in cache.forgetting) and cache.forgetting
    assert all(n == 40 for i, n in enumerate(held) if i not in cache.forgetting)
    every, forgetting = cache.slot_bytes()
    assert cache.row_bytes() == [40 * every + held[cache.forgetting[0]] * forgetting]
    assert cache.ordinary_bytes(40) == 40 * every + 8 * forgetting


def test_a_row_without_a_query_keeps_its_slots():
    """Slots of a row that feeds nothing in a step stay (its next query's position is not known), and a slot a
    later query may still reach (`reach`) stays too."""
    config = tiny_base("mistral-sliding").config
    cache = SlotCache(config, 2)
    both = torch.ones(2, 1, dtype=torch.bool)
    for step in range(20):
        cache.extend(both, torch.tensor([[step], [step]]))
        for layer in cache.kv.layers:
            layer.update(torch.randn(2, 2, 1, 16), torch.randn(2, 2, 1, 16))
    forgotten = cache.forgotten
    assert forgotten > 0
    cache.extend(torch.tensor([[True], [False]]), torch.tensor([[20], [20]]))
    assert cache.forgotten == forgotten
    reaching = SlotCache(config, 1)
    reaching.reach = 5
    for step in range(20):
        reaching.extend(both[:1], torch.tensor([[step]]))
        for layer in reaching.kv.layers:
            layer.update(torch.randn(1, 2, 1, 16), torch.randn(1, 2, 1, 16))
    assert reaching.forgotten == forgotten - 5
