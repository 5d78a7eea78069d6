"""Prompt caching (`engine/prompt_cache.py`): a prompt that begins with one read before reads only the rest, and every
engine gives the same answers as when it reads everything; the store keeps, cuts, replaces and forgets prompts as
its doc says."""

import pytest
import torch

from hamburger.engine.cache import SlotCache, rows_copy
from hamburger.engine.full_heads import FullHeadCache
from hamburger.engine.generate import Generation
from hamburger.engine.prompt_cache import PromptCache, _key
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import tiny_hamburger
from tests.verify_helpers import ENGINES, FOLDINGS, drafting_model, engine_model, engine_of, folding_model


def text(n: int, seed: int) -> list[int]:
    return [4 + (7 * k + 13 * seed + k * k * seed) % 95 for k in range(n)]


SYSTEM = [1] + text(40, 1)  # a shared start, 41 tokens: cut at 32 (block 16) for another question
FIRST = SYSTEM + text(9, 2)  # 50 tokens
FOLLOW_UP = FIRST + text(30, 3)  # the first prompt, then more: it reads 30 new tokens
OTHER = SYSTEM + text(12, 4)  # the shared start only
# (prompt, tokens the cache gives it, in this order); FIRST again: the cut before its last token (48)
TURNS = [(FIRST, 0), (FOLLOW_UP, 50), (OTHER, 32), (FIRST, 48), ([1] + text(20, 5), 0)]


def answers(kind, tokenizer, prompt_cache=None, chunk=None):
    out, model = [], engine_model(kind)
    for prompt, _ in TURNS:
        cfg = DecodingConfig(max_new_tokens=16, confidence=0.5, ignore_eos=True)
        run = engine_of(kind, tokenizer, [prompt], cfg, model, prefill_chunk=chunk, prompt_cache=prompt_cache)
        out.append(run.run()[0])
    return out


@pytest.mark.parametrize("kind", ENGINES)
@pytest.mark.parametrize("chunk", [None, 8])
def test_a_cached_prompt_gives_the_same_answers(kind, chunk, char_tokenizer):
    """Each engine, whole or chunked prefill: the same tokens, groups and KV slots with the cache as without; each
    prompt takes the longest cut of a kept prompt it begins with."""
    plain = answers(kind, char_tokenizer, chunk=chunk)
    store = PromptCache(1 << 30)
    cached = answers(kind, char_tokenizer, store, chunk)
    for a, b, (_, reused) in zip(plain, cached, TURNS):
        assert (a.token_ids, a.groups, a.kv_slots, a.forwards) == (b.token_ids, b.groups, b.kv_slots, b.forwards)
        assert (a.cached_tokens, b.cached_tokens) == (0, reused)
    assert store.hits == 3 and store.tokens_reused == 50 + 32 + 48
    # Each kept prompt holds its own slots after the longest cut of a kept one it begins with: FOLLOW_UP's after FIRST,
    # OTHER's after the cut of the start they share. Lossless verify keeps each prompt with its answer too (16 tokens,
    # the last never fed: `test_lossless_verify_keeps_each_answer`). A folding cache is of another kind: kept whole,
    # and FOLLOW_UP takes FIRST's place.
    held = {len(k): (k.shared, k.cache.num_slots) for k in store._kept}
    assert held == {"verify_fold": {80: (0, 80), 53: (0, 53), 21: (0, 21)},
                    "verify": {50: (0, 50), 65: (50, 15), 80: (50, 30), 95: (80, 15), 53: (32, 21), 68: (53, 15),
                               21: (0, 21), 36: (21, 15)}}.get(kind, {50: (0, 50), 80: (50, 30), 53: (32, 21),
                                                                       21: (0, 21)})


def test_lossless_verify_keeps_each_answer(char_tokenizer):
    """Lossless verify mode keeps a finished row's prompt and answer (all but its last token, never fed): a next prompt
    that writes the answer back reads from there; rows that finish at other steps, after rejected drafts, each keep
    theirs. A folding cache holds merged slots: verify_fold keeps prompts only."""
    model = drafting_model("llama", init="random")  # (drafts the base rejects)
    configs = [DecodingConfig(max_new_tokens=16, confidence=0.2), DecodingConfig(max_new_tokens=9, confidence=0.2)]
    store = PromptCache(1 << 30)
    run = VerifyGeneration(model, char_tokenizer, [FIRST, OTHER], configs, prompt_cache=store)
    firsts = [None, None]
    for event in run:  # (as the server's scheduler does: a row's result is read, and the row released, at its end)
        if event.finish_reason is not None:
            firsts[event.row] = run.result(event.row)
            run.release(event.row)
    assert all(len(r.token_ids) > 2 for r in firsts)
    assert any(a < d for r in firsts for a, d in zip(r.accepted, r.drafts))  # (rejected drafts: holes in the cache)
    for first, prompt in zip(firsts, (FIRST, OTHER)):  # the decoder's inputs kept at the end: a reading's of it all
        kept = prompt + first.token_ids[:-1]
        read = PromptCache(1 << 30)
        VerifyGeneration(model, char_tokenizer, [kept], configs[0], prompt_cache=read).run()
        (mine,) = [k for k in store._kept if k.key == _key(kept)]
        torch.testing.assert_close(mine.cuts[len(kept)], next(iter(read._kept)).cuts[len(kept)], rtol=1e-4, atol=1e-4)
    nexts = [FIRST + firsts[0].token_ids + text(7, 6), OTHER + firsts[1].token_ids + text(5, 7)]
    plain = VerifyGeneration(model, char_tokenizer, nexts, configs).run()
    cached = VerifyGeneration(model, char_tokenizer, nexts, configs, prompt_cache=store).run()
    assert [(r.token_ids, r.drafts, r.accepted) for r in cached] == [(r.token_ids, r.drafts, r.accepted) for r in plain]
    assert [r.cached_tokens for r in cached] == [len(FIRST) + len(firsts[0].token_ids) - 1,
                                                 len(OTHER) + len(firsts[1].token_ids) - 1]
    folding = PromptCache(1 << 30)
    VerifyGeneration(model, char_tokenizer, [FIRST, OTHER], configs, fold=FOLDINGS["segments 2, keep first"],
                     prompt_cache=folding).run()
    assert sorted(len(k) for k in folding._kept) == [len(FIRST), len(OTHER)]


def test_sampled_rows_and_several_answers_read_on_from_the_cache(char_tokenizer):
    """Seeded sampling draws the same tokens after a cached prompt; rows with the same prompt share one reading."""
    configs = [DecodingConfig(max_new_tokens=12, temperature=0.9, seed=s, confidence=0.5) for s in (1, 2, 3)]
    for kind in ("host", "verify"):
        store, model = PromptCache(1 << 30), engine_model(kind)
        engine_of(kind, char_tokenizer, [FIRST], configs[0], model, prompt_cache=store).run()
        with_cache = engine_of(kind, char_tokenizer, [FOLLOW_UP] * 3, configs, model, prompt_cache=store).run()
        without = engine_of(kind, char_tokenizer, [FOLLOW_UP] * 3, configs, model).run()
        assert [r.token_ids for r in with_cache] == [r.token_ids for r in without]
        assert [r.cached_tokens for r in with_cache] == [50] * 3 and store.hits == 1


@pytest.mark.parametrize("chunk", [None, 64])
def test_prompts_begun_from_the_cache_join_together(chunk, char_tokenizer):
    """Requests that arrive together and read on from the cache, each with at most a chunk left, are all read in the
    step they arrive in (as new short prompts are): their first groups come before any row's second."""
    model = tiny_hamburger("llama", seed=3)
    cfg = DecodingConfig(max_new_tokens=6, confidence=1.0, ignore_eos=True)  # (one token a group: a step an event)
    store = PromptCache(1 << 30)
    Generation(model, char_tokenizer, [FIRST], cfg, prompt_cache=store).run()
    prompts = [FIRST + text(5 + k, 10 + k) for k in range(3)]
    run = Generation(model, char_tokenizer, prompts, cfg, prefill_chunk=chunk, prompt_cache=store)
    order = [e.row for e in run]
    assert sorted(order[:3]) == [0, 1, 2] and [r.cached_tokens for r in run.results] == [50] * 3
    assert [r.token_ids for r in run.results] == [r.token_ids for r in Generation(model, char_tokenizer, prompts,
                                                                                   cfg).run()]


def test_msd_context_reads_on_from_a_cut(char_tokenizer):
    """A model whose micro-step decoder reads earlier slots' final states gets them at the cut too."""
    model = tiny_hamburger("llama", seed=3, msd_context=3)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)
    cfg = DecodingConfig(max_new_tokens=16, confidence=0.5, ignore_eos=True)
    store = PromptCache(1 << 30)
    for prompt, reused in TURNS:
        for chunk in (None, 8):
            want = Generation(model, char_tokenizer, [prompt], cfg, prefill_chunk=chunk).run()[0]
            got = Generation(model, char_tokenizer, [prompt], cfg, prefill_chunk=chunk, prompt_cache=store).run()[0]
            assert (got.token_ids, got.groups) == (want.token_ids, want.groups)
    assert store.hits == 2 * len(TURNS) - 2  # (each prompt's second run, and the first of those that begin alike)
    # the decoder's inputs kept at each cut are those of a whole reading when chunks of 5 put cuts within the context
    # of a chunk's start (16 and 32, its first and third token)
    whole, chunked = PromptCache(1 << 30), PromptCache(1 << 30)
    for store, chunk in ((whole, None), (chunked, 5)):
        Generation(model, char_tokenizer, [FIRST], cfg, prefill_chunk=chunk, prompt_cache=store).run()
    (a,), (b,) = whole._kept, chunked._kept
    assert sorted(a.cuts) == sorted(b.cuts) == [16, 32, 48, 50]
    for cut in a.cuts:
        torch.testing.assert_close(a.cuts[cut], b.cuts[cut], rtol=1e-5, atol=1e-5)


def test_a_sliding_window_cache_that_forgot_slots_is_cut_only_at_its_end(char_tokenizer):
    """A base whose layers slide over 8 positions forgets slots while reading a long prompt in chunks: that reading is
    kept, and read on from at its end only."""
    model = tiny_hamburger("mistral-sliding", seed=3)
    cfg = DecodingConfig(max_new_tokens=12, confidence=0.5, ignore_eos=True)
    store = PromptCache(1 << 30)
    for prompt, reused in [(FIRST, 0), (FOLLOW_UP, 50), (OTHER, 0)]:
        want = Generation(model, char_tokenizer, [prompt], cfg).run()[0]
        got = Generation(model, char_tokenizer, [prompt], cfg, prefill_chunk=8, prompt_cache=store).run()[0]
        assert got.token_ids == want.token_ids and got.cached_tokens == reused
    assert all(kept.cache.forgotten for kept in store._kept)


def test_full_heads_caches_are_kept_and_cut(char_tokenizer):
    """Verify mode with a fold and full heads (a cache with a store of its own), prompts read in one batch with left
    padding: the kept copies hold no padding, and the answers are the same."""
    model, folding = folding_model("llama"), FOLDINGS["segments 2, keep first"]
    cfg = DecodingConfig(max_new_tokens=16, confidence=0.2, ignore_eos=True)
    store = PromptCache(1 << 30)

    def run(prompts, cache=None):
        return VerifyGeneration(model, char_tokenizer, prompts, cfg, fold=folding, full_heads=[(0, 1), (3, 0)],
                                prompt_cache=cache).run()

    first = run([FIRST, [1] + text(20, 5)], store)
    assert all(isinstance(k.cache, FullHeadCache) and k.cache.num_slots == len(k) and k.cache.valid.all()
               and k.cache.store.num_slots == len(k) for k in store._kept)
    assert [r.token_ids for r in first] == [r.token_ids for r in run([FIRST, [1] + text(20, 5)])]
    again = run([FOLLOW_UP, OTHER], store)
    assert [r.token_ids for r in again] == [r.token_ids for r in run([FOLLOW_UP, OTHER])]
    assert [r.cached_tokens for r in again] == [50, 32]


def test_prompt_logprobs_rows_read_their_whole_prompt(char_tokenizer):
    """A row that asks for its prompt's log-probabilities reads every token, and gets them all."""
    store, model = PromptCache(1 << 30), engine_model("host")
    cfg = DecodingConfig(max_new_tokens=4, prompt_logprobs=1)
    engine_of("host", char_tokenizer, [FIRST], cfg, model, prompt_cache=store).run()
    res = engine_of("host", char_tokenizer, [FOLLOW_UP], cfg, model, prompt_cache=store).run()[0]
    assert res.cached_tokens == 0 and len(res.prompt_logprobs) == len(FOLLOW_UP) - 1
    assert store.lookups == 0


def one_row_cache(model, prompt: list[int]) -> SlotCache:
    cache = SlotCache(model.base.config, 1)
    ids = torch.tensor([prompt])
    positions = torch.arange(len(prompt))[None]
    mask = cache.extend(torch.ones_like(ids, dtype=torch.bool), positions)
    model.base_forward(model.embed(ids), positions, mask, cache.kv)
    return cache


def inputs_at(cuts):
    return {c: torch.full((2, 4), float(c)) for c in cuts}


def test_the_store_keeps_cuts_replaces_and_forgets():
    model = tiny_hamburger("llama")
    store = PromptCache(1 << 30, block=4)
    assert store.cuts(0, 10, 10) == [4, 8, 10] and store.cuts(5, 9, 20) == [8] and store.cuts(0, 8, 9) == [4, 8]
    assert store.cuts(0, 8, 8) == [4, 8] and store.cuts(8, 9, 9) == [9]
    a = text(10, 1)
    with torch.inference_mode():
        store.add(a, one_row_cache(model, a), inputs_at([4, 8, 10]))
        hit = store.find(a + [5, 6])  # a's end
        assert (hit.length, hit.cache.num_slots, sorted(hit.cuts)) == (10, 10, [4, 8, 10])
        assert hit.inputs.shape == (1, 2, 4) and float(hit.inputs[0, 0, 0]) == 10.0
        hit = store.find(a[:9] + [99])  # 9 tokens in common: the block before
        assert (hit.length, hit.cache.num_slots, sorted(hit.cuts)) == (8, 8, [4, 8])
        assert store.find(a) .length == 8  # (one token is always read)
        assert store.find([a[0], 99, 98, 97, 96]) is None and store.find(a[:3] + [99, 98]) is None
        # the copies are the caller's own: the kept cache still holds the whole prompt
        assert next(iter(store._kept)).cache.num_slots == 10
        b = a + text(6, 2)
        store.add(b, one_row_cache(model, b), inputs_at([4, 8, 12, 16]))  # b holds its own 6 slots after a's
        whole_b = one_row_cache(model, b)
        assert len(store) == 2 and list(store._kept)[-1].key == _key(a) and store.find(a + [1]).length == 10
        hit = store.find(b + [3])
        assert hit.length == 16 and sorted(hit.cuts) == [4, 8, 10, 12, 16] and float(hit.inputs[0, 0, 0]) == 16.0
        for mine, whole in zip(hit.cache.kv.layers, whole_b.kv.layers):
            torch.testing.assert_close(mine.keys, whole.keys)
            torch.testing.assert_close(mine.values, whole.values)
        assert hit.cache.num_slots == 16 and hit.cache.valid.all()
        c = a[:6] + text(6, 3)
        store.add(c, one_row_cache(model, c), inputs_at([4, 8, 12]))  # begins with 6 of a's tokens: a's first block
        assert len(store) == 3 and store.find(b + [3]).length == 16 and store.find(c + [3]).length == 12
        assert sorted((len(k), k.shared, k.cache.num_slots, k.readers) for k in store._kept) == [
            (10, 0, 10, 2), (12, 4, 8, 0), (16, 10, 6, 0)]
        assert store.bytes == sum(k.bytes for k in store._kept) < 3 * whole_b.kv_bytes()
        slot = whole_b.kv_bytes() // 16
        own = [10 * slot + 3 * 2 * 4 * 4, 6 * slot + 2 * 2 * 4 * 4, 8 * slot + 2 * 2 * 4 * 4]  # (+ own inputs' bytes)
        small = PromptCache(sum(own) - 1, block=4)  # no room for all three: the least recently used that no other
        for p, cuts in ((a, [4, 8, 10]), (b, [4, 8, 12, 16]), (c, [4, 8, 12])):  # reads on from goes
            small.add(p, one_row_cache(model, p), inputs_at(cuts))
        assert small.bytes == own[0] + own[2] and small.find(b + [3]).length == 10 and small.find(c + [3]).length == 12
        tiny = PromptCache(own[0] + own[2] - 1, block=4)  # a is used whenever c is: c goes first, then a
        for p, cuts in ((a, [4, 8, 10]), (c, [4, 8, 12])):
            tiny.add(p, one_row_cache(model, p), inputs_at(cuts))
        assert len(tiny) == 1 and tiny.find(a + [1]).length == 10
        d = a[:6]
        store.add(d, one_row_cache(model, d), inputs_at([4, 6]))
        store.add(a, one_row_cache(model, a), inputs_at([4, 8, 10]))  # a begins with d, but cannot be cut at 6
        assert store.find(d + [3]).length == 6
        nothing = PromptCache(0)
        nothing.add(a, one_row_cache(model, a), inputs_at([10]))
        assert len(nothing) == 0 and nothing.find(a + [1]) is None
        with pytest.raises(HamburgerError, match="one-row cache"):
            store.add(a, one_row_cache(model, a), inputs_at([4]))  # no inputs at its end
    with pytest.raises(HamburgerError):
        PromptCache(-1)


def test_rows_copy_leaves_the_cache_as_it_was():
    model = tiny_hamburger("llama")
    with torch.inference_mode():
        cache = one_row_cache(model, text(12, 1))
        cache.merge(one_row_cache(model, text(12, 2)))
        part = rows_copy(cache, [1])
        layer, mine = cache.kv.layers[0], part.kv.layers[0]
        assert part.batch_size == 1 and cache.batch_size == 2
        assert torch.equal(mine.keys[0], layer.keys[1]) and mine.keys.data_ptr() != layer.keys.data_ptr()
        cache.extend(torch.ones(2, 1, dtype=torch.bool))  # the original goes on; the copy does not move
        assert part.num_slots == 12 and part.valid.shape == (1, 12)
    with pytest.raises(HamburgerError, match="static"):
        rows_copy(SlotCache(model.base.config, 1, capacity=8), [0])


def test_a_prompt_cache_needs_the_dynamic_cache_and_one_engine(char_tokenizer):
    model = tiny_hamburger("llama")
    with pytest.raises(HamburgerError, match="dynamic"):
        Generation(model, char_tokenizer, [FIRST], DecodingConfig(), static_cache=True,
                   prompt_cache=PromptCache(1 << 20))
    store = PromptCache(1 << 20)
    Generation(model, char_tokenizer, [FIRST], DecodingConfig(max_new_tokens=2), prompt_cache=store).run()
    Generation(model, char_tokenizer, [FIRST], DecodingConfig(max_new_tokens=2), prompt_cache=store).run()
    for other in (lambda: Generation(tiny_hamburger("llama"), char_tokenizer, [FIRST], DecodingConfig(),
                                     prompt_cache=store),  # another model
                  lambda: VerifyGeneration(model, char_tokenizer, [FIRST], DecodingConfig(), prompt_cache=store),
                  lambda: VerifyGeneration(model, char_tokenizer, [FIRST], DecodingConfig(), prompt_cache=store,
                                           fold=FOLDINGS["segments 2, keep first"])):
        with pytest.raises(HamburgerError, match="another engine"):
            other()
    verifying = PromptCache(1 << 20)  # verify mode, then a fold of it
    VerifyGeneration(model, char_tokenizer, [FIRST], DecodingConfig(max_new_tokens=2), prompt_cache=verifying).run()
    with pytest.raises(HamburgerError, match="another engine"):
        VerifyGeneration(model, char_tokenizer, [FIRST], DecodingConfig(), prompt_cache=verifying,
                         fold=FOLDINGS["segments 2, keep first"])


def test_a_kept_prompt_finds_its_longest_cut_a_prompt_begins_with():
    """`_Kept.cut` (a binary search over the cuts, comparing bytes) agrees with a plain search over every cut, and
    `holds` with its definition, for prompts that share starts of every length."""
    from hamburger.engine.prompt_cache import _Kept

    gen = torch.Generator().manual_seed(0)
    forgot = type("Forgot", (), {"forgotten": 0})
    for trial in range(200):
        tokens = torch.randint(0, 5, (int(torch.randint(1, 40, (1,), generator=gen)),), generator=gen).tolist()
        cuts = sorted({len(tokens), *(c for c in range(4, len(tokens), 4) if torch.rand(1, generator=gen) < 0.8)})
        forgot.forgotten = int(trial % 5 == 0)
        kept = _Kept(_key(tokens), forgot(), dict.fromkeys(cuts), 0)
        keep = int(torch.randint(0, len(tokens) + 1, (1,), generator=gen))
        prompt = tokens[:keep] + torch.randint(0, 5, (int(torch.randint(0, 10, (1,), generator=gen)),),
                                               generator=gen).tolist()
        most, least = max(len(prompt) - 1, 0), int(torch.randint(0, 8, (1,), generator=gen))
        points = [len(tokens)] if forgot.forgotten else cuts
        want = max((c for c in points if least < c <= most and prompt[:c] == tokens[:c]), default=0)
        assert kept.cut(_key(prompt), most, least) == want, (tokens, cuts, prompt, most, least)
        assert kept.holds(_key(prompt)) == (len(prompt) in points and tokens[:len(prompt)] == prompt)
