"""The dynamic slot cache's layers: keys and values in buffers with spare slots, written in place."""

import pytest
import torch
from transformers.cache_utils import DynamicLayer

from hamburger.engine import cache as cache_module
from hamburger.engine.cache import SlotCache, SpareSlotsLayer, cache_bytes
from tests.helpers import tiny_base


def test_spare_slots_layer_holds_what_a_dynamic_layer_holds():
    """Appends, crops, row selection and replaced tensors leave the same keys and values as transformers'
    `DynamicLayer`; appends within the spare slots copy nothing."""
    gen = torch.Generator().manual_seed(0)
    mine, ref = SpareSlotsLayer(), DynamicLayer()

    def both(op):
        op(mine), op(ref)
        assert torch.equal(mine.keys, ref.keys) and torch.equal(mine.values, ref.values)
        assert mine.get_seq_length() == ref.get_seq_length()

    for n in (5, 1, 3):
        k, v = torch.randn(3, 2, n, 4, generator=gen), torch.randn(3, 2, n, 4, generator=gen)
        both(lambda layer: layer.update(k, v))
    buffer = mine._keys[0]
    assert buffer.shape[2] == 5 + 1 + 3 + cache_module.SPARE_SLOTS - 4  # grown once past 5: by 1 + SPARE_SLOTS
    both(lambda layer: layer.crop(-2))
    k, v = torch.randn(3, 2, 2, 4, generator=gen), torch.randn(3, 2, 2, 4, generator=gen)
    both(lambda layer: layer.update(k, v))
    assert mine._keys[0] is buffer, "appending within the spare slots writes in place"
    both(lambda layer: layer.batch_select_indices(torch.tensor([2, 0])))
    both(lambda layer: setattr(layer, "keys", layer.keys[:, :, 1:]) or setattr(layer, "values", layer.values[:, :, 1:]))
    both(lambda layer: layer.update(k[:2], v[:2]))


def test_slot_cache_counts_the_slots_it_holds():
    base = tiny_base()
    cache = SlotCache(base.config, 1)
    assert all(isinstance(layer, SpareSlotsLayer) for layer in cache.kv.layers)
    ids = torch.arange(4, 11)[None]
    with torch.inference_mode():
        base.model(input_ids=ids, past_key_values=cache.kv, use_cache=True)
    total, slots = cache_bytes(cache.kv)
    per_slot = 2 * base.config.num_hidden_layers * base.config.num_key_value_heads * (64 // 4) * 4
    assert slots == 7 and total == 7 * per_slot


def test_a_cache_drops_its_first_slots_and_joins_with_what_read_on():
    """`drop_first` keeps (and holds in memory) only the later slots; `joined` puts a cache's first slots and those of
    one that read on from there back together: the whole cache, which reads on as it does."""
    from hamburger.engine.cache import joined, rows_copy
    from hamburger.errors import HamburgerError

    base = tiny_base()
    whole = SlotCache(base.config, 1)
    ids = torch.arange(4, 11)[None]
    with torch.inference_mode():
        base.model(input_ids=ids, past_key_values=whole.kv, use_cache=True)
        whole.extend(torch.ones(1, 7, dtype=torch.bool))
        later = rows_copy(whole, [0])
        later.drop_first(3)
        assert later.num_slots == 4 and later.valid.shape == (1, 4)
        for mine, theirs in zip(later.kv.layers, whole.kv.layers):
            assert torch.equal(mine.keys, theirs.keys[:, :, 3:]) and torch.equal(mine.values, theirs.values[:, :, 3:])
            assert mine.keys.untyped_storage().nbytes() == mine.keys.numel() * mine.keys.element_size()
        again = joined([(whole, 3), (later, 4)])
        assert again.num_slots == 7 and torch.equal(again.valid, whole.valid)
        for mine, theirs in zip(again.kv.layers, whole.kv.layers):
            assert torch.equal(mine.keys, theirs.keys) and torch.equal(mine.values, theirs.values)
            assert mine.keys.data_ptr() != theirs.keys.data_ptr()
        short = joined([(whole, 2), (later, 1)])  # (the first 2 slots, then slot 3: a cache of 3 slots)
        assert short.num_slots == 3 and torch.equal(short.kv.layers[0].keys[:, :, 2], whole.kv.layers[0].keys[:, :, 3])
        nxt = torch.tensor([[11]])
        a = base.model(input_ids=nxt, past_key_values=again.kv, use_cache=True).last_hidden_state
        b = base.model(input_ids=nxt, past_key_values=whole.kv, use_cache=True).last_hidden_state
        assert torch.equal(a, b)
    sliding = SlotCache(tiny_base("mistral-sliding").config, 1)
    assert whole.plain() and not sliding.plain() and not SlotCache(base.config, 1, capacity=8).plain()
    for bad in (lambda: joined([(sliding, 0)]), lambda: sliding.drop_first(0), lambda: joined([(whole, 9)])):
        with pytest.raises(HamburgerError):
            bad()
