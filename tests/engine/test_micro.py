"""The device micro loop equals the host one; its compiled form equals its eager one; on-device sampling."""

import pytest
import torch

from hamburger.engine.generate import Generation
from hamburger.engine.micro import _COMPILED, compile_micro_loop
from hamburger.engine.sampling import DecodingConfig, draw_rows, draw_tokens, warp_logits
from tests.helpers import tiny_hamburger

PROMPTS = [[1, 40, 41, 42, 43], [1, 50, 60, 70, 80, 90, 22, 23, 24], [1, 77], [1, 5, 6, 7, 8, 9, 10]]


def long_groups(family: str, seed: int = 5):
    model = tiny_hamburger(family, seed=seed)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)  # make long groups likely
    return model


def both_loops(model, tokenizer, prompts, cfgs, **kw):
    host = Generation(model, tokenizer, prompts, cfgs, trace_logits=True, **kw)
    device = Generation(model, tokenizer, prompts, cfgs, trace_logits=True, micro_loop="device", **kw)
    return host, host.run(), device, device.run()


def key(r):
    return r.token_ids, r.groups, r.finish_reason, r.kv_slots, r.kv_bytes, r.forwards, r.text


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_device_loop_equals_host_loop_on_a_ragged_batch_with_early_eos(family, char_tokenizer):
    """Rows with different prompt lengths, max_new_tokens, knobs (1.0 among them) and an EOS inside a group:
    the on-device bookkeeping ends every group and row where the host's does."""
    model = long_groups(family, seed=3)
    free = Generation(model, char_tokenizer, [PROMPTS[1]], DecodingConfig(max_new_tokens=20, confidence=0.5)).run()
    eos = free[0].token_ids[5]  # a token the row emits inside a group: declared an EOS id below
    model.base.generation_config.eos_token_id = [2, 3, eos]
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=c) for n, c in ((20, 0.5), (20, 0.5), (1, 0.5), (9, 1.0))]
    cfgs.append(DecodingConfig(max_new_tokens=11, confidence=0.6, ignore_eos=True))
    try:
        host_run, host, device_run, device = both_loops(model, char_tokenizer, PROMPTS + [PROMPTS[1]], cfgs)
    finally:
        model.base.generation_config.eos_token_id = [2, 3]
    first = free[0].token_ids.index(eos)
    assert host[1].finish_reason == "eos" and host[1].token_ids == free[0].token_ids[:first + 1]
    assert host[4].tokens == 11 and eos in host[4].token_ids[:-1]  # ignore_eos goes past it
    assert host[2].tokens == 1 and set(host[3].groups) == {1} and max(host[0].groups) > 1
    for h, d in zip(host, device):
        assert key(d) == key(h)
        # The host loop's micro batch shrinks as groups end (other matrix shapes): probabilities agree to rounding.
        torch.testing.assert_close(d.token_probs, h.token_probs, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(d.p_continue, h.p_continue, rtol=1e-6, atol=1e-7)
    for h, d in zip(host_run.logits, device_run.logits):
        torch.testing.assert_close(torch.stack(d), torch.stack(h), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_device_loop_is_exact_at_batch_one(family, char_tokenizer):
    """Same shapes as the host loop: every result field equal, probabilities to the bit, streamed events alike."""
    model = long_groups(family, seed=3)
    for prompt in PROMPTS[:2]:
        cfg = DecodingConfig(max_new_tokens=17, confidence=0.5, stop=["zz"])
        host_run, (h,), device_run, (d,) = both_loops(model, char_tokenizer, [prompt], cfg)
        assert max(h.groups) > 1
        assert d.to_dict() | {"prefill_s": 0, "decode_s": 0, "decode_tok_s": 0} == \
            h.to_dict() | {"prefill_s": 0, "decode_s": 0, "decode_tok_s": 0}


def test_device_loop_with_static_cache_and_joining_rows(char_tokenizer):
    """The device loop under the static base cache, and with rows joining a running batch."""
    model = long_groups("llama")
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=0.5) for n in (14, 6, 10)]
    singles = [Generation(model, char_tokenizer, [p], c).run()[0] for p, c in zip(PROMPTS, cfgs)]
    static = Generation(model, char_tokenizer, PROMPTS[:3], cfgs, static_cache=True, micro_loop="device").run()
    run = Generation(model, char_tokenizer, PROMPTS[:1], cfgs[:1], micro_loop="device")
    for n, _ in enumerate(run):
        if n == 1:
            run.add(PROMPTS[1], cfgs[1]), run.add(PROMPTS[2], cfgs[2])
    for single, s, joined in zip(singles, static, run.results):
        assert (s.token_ids, s.groups) == (joined.token_ids, joined.groups) == (single.token_ids, single.groups)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_micro_loop_equals_eager(backend, char_tokenizer):
    """One graph for all micro steps (always max_steps, masked), with the compiled macro step next to it."""
    model = long_groups("llama", seed=3)
    cfgs = [DecodingConfig(max_new_tokens=12, confidence=0.5), DecodingConfig(max_new_tokens=12, confidence=0.7)]
    eager = Generation(model, char_tokenizer, PROMPTS[:2], cfgs, micro_loop="device").run()
    model.compile_decoding(mode=None, backend=backend)
    compile_micro_loop(model, backend=backend)
    try:
        compiled = Generation(model, char_tokenizer, PROMPTS[:2], cfgs, static_cache=True, micro_loop="device").run()
    finally:
        _COMPILED.pop(model)
    assert max(g for r in eager for g in r.groups) > 1
    for e, c in zip(eager, compiled):
        assert (c.token_ids, c.groups, c.finish_reason) == (e.token_ids, e.groups, e.finish_reason)


def test_device_sampling_is_seeded_per_row_and_cold_is_greedy(char_tokenizer):
    model = long_groups("llama")
    cfgs = [DecodingConfig(max_new_tokens=12, confidence=0.6, temperature=0.9, top_p=0.95, top_k=30, seed=s)
            for s in (11, 12, 13)] + [DecodingConfig(max_new_tokens=12, confidence=0.6)]

    def run(prompts, configs):
        return Generation(model, char_tokenizer, prompts, configs, micro_loop="device").run()

    together = run(PROMPTS, cfgs)
    assert [r.token_ids for r in together] == [r.token_ids for r in run(PROMPTS, cfgs)]
    for prompt, cfg, res in zip(PROMPTS, cfgs, together):  # a row's draws do not depend on the batch
        assert (run([prompt], cfg)[0].token_ids, run([prompt], cfg)[0].groups) == (res.token_ids, res.groups)
    greedy = Generation(model, char_tokenizer, [PROMPTS[3]], cfgs[3]).run()[0]
    cold = run([PROMPTS[3]], DecodingConfig(max_new_tokens=12, confidence=0.6, temperature=1e-6, seed=1))[0]
    assert cold.token_ids == greedy.token_ids == together[3].token_ids


@pytest.mark.parametrize("draw", [draw_tokens, draw_rows])
def test_draw_tokens_follows_the_warped_distribution(draw):
    """Inverting the warped CDF at uniform draws samples `warp_logits`' distribution (and nothing outside it), in the
    sorted order (`draw_tokens`) or the vocabulary's (`draw_rows`)."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 40, generator=g) * 2
    settings = [DecodingConfig(temperature=1.0), DecodingConfig(temperature=0.7, top_k=5),
                DecodingConfig(temperature=1.3, top_p=0.6), DecodingConfig(temperature=0.8, top_p=0.9, min_p=0.1)]
    n = 20000
    for b, cfg in enumerate(settings):
        expected = warp_logits(logits[b], cfg).softmax(-1)
        rows = logits[b].expand(n, -1)
        full = lambda v: torch.full((n,), float(v), dtype=torch.float64)  # noqa: E731
        drawn = draw(rows, full(cfg.temperature), full(cfg.top_k), full(cfg.top_p),
                     torch.rand(n, generator=g, dtype=torch.float64), full(cfg.min_p))
        freq = torch.bincount(drawn, minlength=40).double() / n
        assert (freq[expected == 0] == 0).all()
        assert (freq - expected.double()).abs().max() < 0.015
    greedy = draw(logits, torch.zeros(4, dtype=torch.float64), torch.zeros(4), torch.ones(4),
                  torch.rand(4, dtype=torch.float64))
    assert greedy.tolist() == logits.argmax(-1).tolist()


def test_bench_methods_take_the_micro_loop(char_tokenizer):
    from hamburger.bench.methods import build_methods

    model = long_groups("llama", seed=3)
    host, device = (build_methods(model, char_tokenizer, ["hamburger"], [0.5], micro_loop=loop)[0]
                    for loop in ("host", "device"))
    assert device.micro_loop == "device"
    assert device.run_batch(PROMPTS, 10) == host.run_batch(PROMPTS, 10)
    assert device.run(PROMPTS[0], 10).token_ids == host.run(PROMPTS[0], 10).token_ids
