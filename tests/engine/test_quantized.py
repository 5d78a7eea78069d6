"""Quantized history (`engine/quantized.py`): with a fold's ``bits``, the slots it takes out move into an 8- or 4-bit
store that every layer still reads. The reference is the same decode on an ordinary cache whose leaving slots are rounded in
place to what the store holds (`rounded_in_place`); the bytes are measured."""

import pytest
import torch

from hamburger.data.segment import SegmentSettings
from hamburger.engine import cache as cache_module
from hamburger.engine.folding import Folding, parse_folding
from hamburger.engine.quantized import QuantizedHistoryCache, dequantize, quantize, rotation, round_trip
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS
from tests.verify_helpers import folding_model

FOLDS = {"keep none": Folding(window=3, keep="none", bits=8,
                              segments=SegmentSettings(strategy="decreasing", ratio=1.03)),
         "keep first, growing": Folding(window=2, share=0.3, keep="first", bits=8,
                                        segments=SegmentSettings(strategy="decreasing", ratio=1.03, max_steps=6)),
         "keep none, 4 bits": Folding(window=3, keep="none", bits=4,
                                      segments=SegmentSettings(strategy="decreasing", ratio=1.03)),
         "keep none, 8/4 bits rotated": Folding(window=3, keep="none", bits=8, value_bits=4, rotate=True,
                                                segments=SegmentSettings(strategy="decreasing", ratio=1.03)),
         "keep first, 8/4 bits rotated, prompt stored": Folding(
             window=3, keep="first", bits=8, value_bits=4, rotate=True, prompt=2,
             segments=SegmentSettings(strategy="decreasing", ratio=1.03))}


class RoundedInPlace(VerifyGeneration):
    """The reference: an ordinary cache; a fold's leaving slots stay valid, their keys and values replaced by what
    the store would read back."""

    def _new_cache(self, batch_size, capacity=None):
        return super(VerifyGeneration, self)._new_cache(batch_size, capacity)

    @staticmethod
    def _fold_out(cache, b, r):
        groups = r.folding.due(r.fed - len(r.prompt_ids))
        if groups:
            live = list(r.folding.live)  # (the slots stay: their ranks from the end too)
            gone = r.folding.fold(cache.valid[b].clone(), groups)
            r.folding.live = live
            fold = r.folding.folding
            turn = rotation(layer_head(cache)).to(cache.kv.layers[0].keys.dtype) if fold.rotate else None
            for i, layer in enumerate(cache.kv.layers):
                held = gone[cache.forgotten:] if i in cache.forgetting else gone  # (sliding layers' forgotten slots)
                for t, bits in ((layer.keys, fold.bits), (layer.values, fold.value_bits or fold.bits)):
                    t[b, :, held] = round_trip(t[b, :, held], bits, turn)
        return []


def layer_head(cache):
    return cache.kv.layers[0].keys.shape[-1]


def decode(cls, model, tokenizer, prompts, cfg, fold):
    run = cls(model, tokenizer, prompts, cfg, fold=fold, trace_logits=True)
    return run.run(), [torch.stack(logits) for logits in run.logits]


def test_quantize_round_trip():
    """Each value comes back within half its scale; 8 bits: int8 and a scale per row; 4 bits: two values a byte and a
    scale per 32 channels, each channel's own (the halves of a byte are not swapped); zeros stay zeros."""
    x = torch.randn(2, 3, 5, 64) * torch.logspace(-3, 2, 64)
    for bits, dtype, widths in ((8, torch.int8, (64, 1)), (4, torch.uint8, (32, 2))):
        values, scales = quantize(x, bits)
        assert values.dtype == dtype and (values.shape[-1], scales.shape[-1]) == widths
        per_channel = scales.repeat_interleave(64 // scales.shape[-1], -1)
        assert ((dequantize(values, scales) - x).abs() <= per_channel / 2 + 1e-6 * x.abs()).all()
        zero_values, zero_scales = quantize(torch.zeros(1, 32), bits)
        assert (dequantize(zero_values, zero_scales) == 0).all()
    ramp = torch.arange(-7.0, 9.0).clamp(max=7)[None]  # (16 channels: one group, every level once)
    assert torch.equal(dequantize(*quantize(ramp, 4)), ramp)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_dequantize_is_each_value_times_its_scale(dtype):
    """The read is exactly the stored integers times their group's scale, in the scales' dtype: a byte's low half is
    its even channel, its high half the odd one, each less 8 (4 bits), whatever the table lookup does (pairs read as
    one integer; float64, which has no such integer, by the two-column lookup)."""
    x = (torch.randn(2, 3, 7, 64) * torch.logspace(-2, 1, 64)).to(dtype)
    for bits in (8, 4):
        values, scales = quantize(x, bits)
        if bits == 4:
            ints = torch.stack([values & 15, values >> 4], -1).flatten(-2).to(torch.int16) - 8
        else:
            ints = values.to(torch.int16)
        per_channel = scales.repeat_interleave(64 // scales.shape[-1], -1)
        got = dequantize(values, scales)
        assert got.dtype == dtype and torch.equal(got, ints.to(dtype) * per_channel)


def test_the_store_writes_in_place_until_its_spare_slots_are_used():
    """Storing slots writes into spare slots of the store's buffers (no copy of the store) until they run out; the
    views read and counted are the slots in use only."""
    config = folding_model("llama").base.config
    cache = QuantizedHistoryCache(config, 1, bits=8, value_bits=4)
    layers, heads, d = config.num_hidden_layers, config.num_key_value_heads, config.head_dim
    k = torch.randn(1, heads, 10, d)
    for i in range(layers):
        cache.kv.update(k, k, i)
    cache.hold(0, torch.tensor([0, 1]))
    store = cache.stores[0]
    first = store.buffers[0].data_ptr()
    assert store.width == 2 == store.k.shape[2] and store.buffers[0].shape[2] > 2
    cache.hold(0, torch.tensor([2, 3, 4]))
    assert store.buffers[0].data_ptr() == first and store.width == 5 == int(cache.stored.sum())
    assert cache.store_bytes() == layers * heads * 5 * ((d + 4) + (d // 2 + 4))  # (heads of d <= 32: one scale)
    assert torch.equal(dequantize(store.k, store.ks)[0, :, 2:5], dequantize(*quantize(k[0, :, 2:5], 8)))
    cache.hold(0, torch.arange(5, 10).repeat(8))  # (more than the spare slots: new buffers, the old slots kept)
    assert store.buffers[0].data_ptr() != first and store.width == 45 == store.v.shape[2]
    assert torch.equal(dequantize(store.k, store.ks)[0, :, :5], dequantize(*quantize(k[0, :, :5], 8)))


@pytest.mark.parametrize("d", [64, 48])
def test_rotation_is_orthogonal_and_spreads_a_large_channel(d):
    """The turn is orthogonal (a Hadamard matrix for a power of 2, else a seeded one, the same each call); reading back
    through it undoes it; and a head with one large channel comes back closer turned than plain, at 8 bits (and 4)."""
    turn = rotation(d)
    torch.testing.assert_close(turn @ turn.T, torch.eye(d), atol=1e-6, rtol=0)
    assert torch.equal(turn, rotation(d))
    if d == 64:
        assert torch.allclose(turn.abs(), torch.full((d, d), d ** -0.5))
    x = torch.randn(200, d, generator=torch.Generator().manual_seed(1))
    x[:, 3] *= 30  # (an outlier channel, as keys have)
    assert torch.equal(round_trip(x, 8), dequantize(*quantize(x, 8)))
    for bits in (8, 4) if d % 32 == 0 else (8,):  # (a 4-bit store needs heads of a multiple of 32 channels)
        plain, turned = ((round_trip(x, bits, t) - x).norm() for t in (None, turn))
        assert turned < 0.6 * plain


@pytest.mark.parametrize("name,family,lean", [(name, "llama", True) for name in FOLDS] + [
    ("keep none, 8/4 bits rotated", "gemma3", True), ("keep none, 8/4 bits rotated", "gemma3", False),
    ("keep first, 8/4 bits rotated, prompt stored", "mistral-sliding", True), ("keep none", "qwen3", True),
    ("keep none", "phi3", False)])
def test_logits_are_the_rounded_histories(name, family, lean, char_tokenizer):
    """The store's reading is the ordinary cache's with the leaving slots rounded in place (up to the order attention
    sums the slots in), token for token; and it is not lossless verify's (so this can fail). On transformers' own
    layers too (the lean pass off: Gemma 3, Phi-3), and with sliding windows of 8 positions, which
    the stored slots keep (Gemma 3, Mistral)."""
    model, fold = folding_model(family), FOLDS[name]
    model.lean = lean
    cfg = DecodingConfig(max_new_tokens=40, confidence=0.2, ignore_eos=True)
    stored, differs = 0, False
    for prompt in PROMPTS:
        (res,), (logits,) = decode(VerifyGeneration, model, char_tokenizer, [prompt], cfg, fold)
        (ref,), (want,) = decode(RoundedInPlace, model, char_tokenizer, [prompt], cfg, fold)
        torch.testing.assert_close(logits, want, rtol=1e-4, atol=1e-4)
        assert res.token_ids == ref.token_ids
        (_,), (lossless,) = decode(VerifyGeneration, model, char_tokenizer, [prompt], cfg, None)
        n = min(len(lossless), len(logits))
        differs |= bool((logits[:n] - lossless[:n]).abs().max() > 1e-6)
        stored += res.kv_slots < res.kv_slots_ordinary
    assert differs and stored == len(PROMPTS)


@pytest.mark.parametrize("compact_at, name", [(0.0, "keep none"), (2.0, "keep none"), (0.0, "keep none, 4 bits"),
                                             (2.0, "keep none, 8/4 bits rotated"),
                                             (0.0, "keep first, 8/4 bits rotated, prompt stored")])
def test_ragged_batch_equals_single_runs(compact_at, name, char_tokenizer, monkeypatch):
    """Rows store slots at different forwards and end at different lengths (the cache compacted always or never):
    each row gives what it gives alone."""
    monkeypatch.setattr(cache_module, "COMPACT_AT", compact_at)
    model, fold = folding_model("llama"), FOLDS[name]
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.2, ignore_eos=True) for n in (40, 13, 29)]
    batch, logits = decode(VerifyGeneration, model, char_tokenizer, PROMPTS, cfgs, fold)
    for prompt, cfg, res, got in zip(PROMPTS, cfgs, batch, logits):
        (alone,), (want,) = decode(VerifyGeneration, model, char_tokenizer, [prompt], cfg, fold)
        assert (res.token_ids, res.kv_slots) == (alone.token_ids, alone.kv_slots)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["keep none", "keep none, 4 bits", "keep none, 8/4 bits rotated"])
def test_the_store_bytes_are_measured(name, char_tokenizer):
    """kv_bytes is the cache's tensors plus the store's values and scales; kv_slots weighs a stored slot by its bytes'
    share of a cache slot's (for fp32 and 8 bits: (d + 4) / 4d per key or value row; 4 bits, heads of d <= 32
    channels: (d / 2 + 4) / 4d; keys and values at their own bits: the mean of the two)."""
    model, fold = folding_model("llama"), FOLDS[name]
    config = model.base.config
    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], DecodingConfig(max_new_tokens=30, confidence=0.2,
                                                                              ignore_eos=True), fold=fold)
    caches = []
    original = run._new_cache
    run._new_cache = lambda *a, **k: caches.append(original(*a, **k)) or caches[-1]
    res = run.run()[0]
    cache = caches[0]
    assert isinstance(cache, QuantizedHistoryCache)
    d, heads, layers = config.head_dim, config.num_key_value_heads, config.num_hidden_layers
    held = int(cache.stored.sum())
    assert held > 5 and d <= 32
    key_row, value_row = ((d if bits == 8 else d // 2) + 4 for bits in (fold.bits, fold.value_bits or fold.bits))
    assert cache.store_bytes() == layers * heads * cache.stored.shape[1] * (key_row + value_row)
    assert cache.stored_share() == pytest.approx((key_row + value_row) / (8 * d))
    main = int(cache.valid.sum())
    assert cache.kv_slots() == [round(main + held * (key_row + value_row) / (8 * d))]
    assert res.kv_slots == cache.kv_slots()[0] < res.kv_slots_ordinary


def test_the_prompt_is_stored_but_its_first_slots(char_tokenizer):
    """With ``prompt=N`` the first fold stores the prompt's slots too, all but its first N: the store holds them beside
    the answer's, and the cache keeps only the first N prompt slots and the answer's window."""
    model = folding_model("llama")
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.2, ignore_eos=True)
    held = {}
    for keep_first in (None, 0, 3):
        fold = Folding(window=4, keep="none", bits=8, value_bits=4, rotate=True, prompt=keep_first,
                       segments=SegmentSettings(strategy="decreasing", ratio=1.03))
        run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=fold)
        caches = []
        original = run._new_cache
        run._new_cache = lambda *a, **k: caches.append(original(*a, **k)) or caches[-1]
        res = run.run()[0]
        held[keep_first] = (int(caches[0].stored.sum()), int(caches[0].valid.sum()), res.kv_slots)
    prompt = len(run.rows[0].prompt_ids)
    answer_stored, cached, slots = held[None]
    assert held[0][:2] == (answer_stored + prompt, cached - prompt)
    assert held[3][:2] == (answer_stored + prompt - 3, cached - prompt + 3)
    assert held[0][2] < held[3][2] < slots


def test_a_sampled_row_reads_no_fold_reader(char_tokenizer):
    """The fold reader's adapters (``after_fold``) read dropped slots; a stored history is read by the base alone:
    sampled, the decode is the same with and without them."""
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.2, temperature=0.8, seed=3, ignore_eos=True)
    plain, adapted = folding_model("llama"), folding_model("llama", scope="after_fold")
    runs = [decode(VerifyGeneration, m, char_tokenizer, [PROMPTS[1]], cfg, FOLDS["keep none"]) for m in (plain,
                                                                                                         adapted)]
    assert runs[0][0][0].token_ids == runs[1][0][0].token_ids
    torch.testing.assert_close(runs[0][1][0], runs[1][1][0])


def test_bad_bits_are_refused(char_tokenizer):
    model, cfg = folding_model("llama"), DecodingConfig()
    for spec, match in [("segments:8:none:bits=3", "bits"), ("segments:8:bits=8", "merged"),
                        ("segments:8:none:prompt=2", "prompt=N"), ("segments:8:none:bits=8:prompt=-1", "prompt=N"),
                        ("segments:8:first:kv=0.6:bits=8", "budget"), ("segments:8:none:bits=8/3", "value bits"),
                        ("segments:8:none:rotate", "rotate")]:
        with pytest.raises(HamburgerError, match=match):
            VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=parse_folding(spec))
    with pytest.raises(HamburgerError, match="full heads"):
        VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=FOLDS["keep none"], full_heads=[(0, 0)])
    assert parse_folding("segments:60:0.45:none:bits=4") == Folding(window=60, share=0.45, keep="none", bits=4)
    assert parse_folding("segments:60:rotate:0.45:none:bits=8/4") == Folding(window=60, share=0.45, keep="none",
                                                                            bits=8, value_bits=4, rotate=True)
    assert parse_folding("segments:60:0.45:none:bits=8/4:rotate:prompt=4").prompt == 4
    for spec in ("segments:8:none:bits=8/4/4", "segments:8:none:rotate=1", "segments:8:none:rotate:rotate"):
        with pytest.raises(HamburgerError, match="a folding is"):
            parse_folding(spec)
    config = model.base.config
    config_48 = type(config)(**{**config.to_dict(), "head_dim": 48})
    with pytest.raises(HamburgerError, match="multiple of 32"):
        QuantizedHistoryCache(config_48, 1, bits=4)


@pytest.mark.parametrize("name,family", [("keep none", "llama"), ("keep none, 8/4 bits rotated", "llama"),
                                         ("keep none, 8/4 bits rotated", "gemma3")])
def test_rows_joining_mid_run_equal_single_runs(name, family, char_tokenizer, monkeypatch):
    """Rows added from `poll` once the running rows hold stored slots (the stores merged, widened to the wider one;
    rotated, a joining row's cache turns as it joins, before its first stored slot): each row gives what it gives
    alone. With a sliding window (Gemma 3) the stored slots' positions join and leave with their rows."""
    model, fold = folding_model(family), FOLDS[name]
    merged_into_a_store = []
    merge = QuantizedHistoryCache.merge

    def recording_merge(self, other):
        merged_into_a_store.append(self.stores is not None)
        assert other.turned is False and self.turned is fold.rotate
        merge(self, other)
        assert other.turned is fold.rotate

    monkeypatch.setattr(QuantizedHistoryCache, "merge", recording_merge)
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.2, ignore_eos=True)
    late, run = [PROMPTS[1], PROMPTS[2]], None

    def poll():
        if late and run.rows[0].fed > len(PROMPTS[0]) + 12:  # (by then the first row stored slots)
            run.add(late.pop(0), cfg)

    run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=fold, poll=poll)
    results = run.run()
    assert len(results) == 3 and not late and any(merged_into_a_store)
    for res, prompt in zip(results, PROMPTS):
        alone = VerifyGeneration(model, char_tokenizer, [prompt], cfg, fold=fold).run()[0]
        assert (res.token_ids, res.kv_slots) == (alone.token_ids, alone.kv_slots)
        assert res.kv_slots < res.kv_slots_ordinary


def test_until_its_first_stored_slot_a_rotated_cache_reads_as_lossless_verify(char_tokenizer):
    """The turn waits for the first stored slot: a decode that stores nothing (the window longer than the answer)
    gives lossless verify's logits bit for bit, its cache never turned; with a short window the cache turns and the
    logits move (so the equality can fail)."""
    model = folding_model("llama")
    cfg = DecodingConfig(max_new_tokens=24, confidence=0.2, ignore_eos=True)
    (plain,), (want,) = decode(VerifyGeneration, model, char_tokenizer, [PROMPTS[0]], cfg, None)
    for window, equal in ((30, True), (3, False)):
        fold = Folding(window=window, keep="none", bits=8, value_bits=4, rotate=True, prompt=2,
                       segments=SegmentSettings(strategy="decreasing", ratio=1.03))
        run = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]], cfg, fold=fold, trace_logits=True)
        caches = []
        original = run._new_cache
        run._new_cache = lambda *a, **k: caches.append(original(*a, **k)) or caches[-1]
        (res,) = run.run()
        assert caches[0].turned is not equal and (caches[0].stores is None) is equal
        n = min(len(want), len(run.logits[0]))
        assert torch.equal(torch.stack(run.logits[0])[:n], want[:n]) is equal
        if equal:
            assert res.token_ids == plain.token_ids


def test_a_row_that_leaves_takes_the_store_width_only_it_needed():
    """`select_rows` narrows the store to the most slots a remaining row holds; the rows kept read back what they
    stored, and their held marks stay."""
    config = folding_model("llama").base.config
    cache = QuantizedHistoryCache(config, 3, bits=8, value_bits=4, rotate=True)
    k = torch.randn(3, config.num_key_value_heads, 12, config.head_dim)
    for i in range(config.num_hidden_layers):
        cache.kv.update(k, k, i)
    cache.valid = torch.ones(3, 12, dtype=torch.bool)
    for row, n in enumerate((4, 10, 2)):
        cache.hold(row, torch.arange(n))
    before = [dequantize(store.k, store.ks)[[0, 2]][:, :, :4] for store in cache.stores]
    cache.select_rows(torch.tensor([0, 2]))
    assert cache.stored.shape == (2, 4) and cache.stored.sum(1).tolist() == [4, 2]
    assert all(store.width == 4 for store in cache.stores)
    for store, want in zip(cache.stores, before):
        assert torch.equal(dequantize(store.k, store.ks), want)
    cache.select_rows(torch.tensor([1]))
    assert cache.stored.shape == (1, 2) and cache.stores[0].k.shape[2] == 2


def test_a_row_joins_a_batch_whose_store_emptied():
    """Once the rows that held slots leave, the store is empty but there, and is measured and read as empty; a row that
    joins then (no store of its own) gets one too, and storing goes on (the server's continuous batching met both)."""
    config = folding_model("llama").base.config
    caches = [QuantizedHistoryCache(config, n, bits=8, value_bits=4, rotate=True) for n in (2, 1)]
    for cache in caches:
        k = torch.randn(cache.batch_size, config.num_key_value_heads, 6, config.head_dim)
        for i in range(config.num_hidden_layers):
            cache.kv.update(k, k, i)
        cache.extend(torch.ones(cache.batch_size, 6, dtype=torch.bool))
    running, joining = caches
    running.hold(0, torch.arange(3))
    running.select_rows(torch.tensor([1]))
    assert running.stored.shape == (1, 0) and running.stores is not None
    share = (config.head_dim + 4 + config.head_dim // 2 + 4) / (8 * config.head_dim)  # (8/4 bits, heads <= 32)
    assert running.store_bytes() == 0 and running.stored_share() == pytest.approx(share)
    assert running.kv_slots() == [6] and running.kv_bytes() == caches[1].kv_bytes()
    stored = running.stores[0]
    assert dequantize(stored.v, stored.vs).shape == (1, config.num_key_value_heads, 0, config.head_dim)
    running.merge(joining)
    assert running.stored.shape == (2, 0) and running.batch_size == 2
    running.hold(1, torch.arange(2))
    assert running.stored.sum(1).tolist() == [0, 2]
    assert running.stores[0].k.shape[:3] == (2, config.num_key_value_heads, 2)


@pytest.mark.parametrize("name", ["keep none", "keep none, 8/4 bits rotated",
                                  "keep first, 8/4 bits rotated, prompt stored"])
def test_server_traffic_equals_single_runs(name, char_tokenizer):
    """Continuous batching as the server runs it (`serve.scheduler`): at most 2 rows at a time, a finished row read and
    released, the next prompt joining from `poll`. Rows of different lengths store slots, leave, and join batches whose
    store is wide, narrow or empty; each row gives what it gives alone."""
    model, fold = folding_model("llama"), FOLDS[name]
    requests = [(PROMPTS[i % 3], n) for i, n in enumerate((30, 4, 12, 2, 25, 3, 9, 16))]
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.2, ignore_eos=True) for _, n in requests]
    waiting, which, results, run = list(range(2, len(requests))), {0: 0, 1: 1}, {}, None

    def poll():
        while waiting and run.active_rows < 2:
            i = waiting.pop(0)
            which[run.add(requests[i][0], cfgs[i])] = i

    run = VerifyGeneration(model, char_tokenizer, [p for p, _ in requests[:2]], cfgs[:2], fold=fold, poll=poll)
    for event in run:
        if event.finish_reason is not None:
            results[which[event.row]] = run.result(event.row)
            run.release(event.row)
    assert sorted(results) == list(range(len(requests)))
    for i, ((prompt, _), cfg) in enumerate(zip(requests, cfgs)):
        alone = VerifyGeneration(model, char_tokenizer, [prompt], cfg, fold=fold).run()[0]
        assert (results[i].token_ids, results[i].kv_slots) == (alone.token_ids, alone.kv_slots)
