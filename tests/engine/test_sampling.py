"""Token choice: the top-p set without sorting the vocabulary, and the distributions sampled rows draw from."""

import math

import pytest
import torch

from benchmarks.top_p_cost import sorted_nucleus  # the definition: sort, keep while the mass before is < top_p
from hamburger.engine.sampling import (DecodingConfig, choose_tokens, draw_each, draw_rows, draw_tokens, nucleus,
                                      row_settings, sample, warp_logits, warp_rows, warped_probs)
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS
from tests.verify_helpers import ENGINES, engine_of


@pytest.mark.parametrize("vocab", [7, 300, 49152])
def test_nucleus_is_the_sorted_top_p_set(vocab):
    """Each row of a batch, with its own top_p, gets the sorted definition's set, as it does alone (1: every token)."""
    g = torch.Generator().manual_seed(vocab)
    scales = (0.3, 2.0, 8.0)  # flat (the search grows to the whole vocabulary) to peaked (the first 64 hold it)
    top_ps = torch.tensor([0.05, 0.5, 0.9, 0.99, 1.0], dtype=torch.float64)
    logits = torch.cat([torch.randn(len(top_ps), vocab, generator=g) * scale for scale in scales])
    logits[:, : vocab // 3] = -math.inf  # (top-k's mask)
    per_row = top_ps.repeat(len(scales))
    together = nucleus(logits, per_row)
    for row, top_p, kept in zip(logits, per_row.tolist(), together):
        expected = sorted_nucleus(row, top_p) if top_p < 1 else torch.ones(vocab, dtype=torch.bool)
        assert torch.equal(kept, expected) and torch.equal(nucleus(row, top_p), expected)
    assert torch.equal(nucleus(logits.reshape(3, -1, vocab), per_row.reshape(3, -1)), together.reshape(3, -1, vocab))


def test_nucleus_of_a_certain_token_and_of_a_uniform_row():
    logits = torch.full((1000,), -math.inf)
    logits[17] = 0.0
    assert nucleus(logits, 0.9).nonzero().flatten().tolist() == [17]
    assert int(nucleus(torch.zeros(1000), 0.25).sum()) == 250  # (the 250th token's preceding mass is 0.249)


def test_warp_applies_temperature_top_k_then_top_p():
    logits = torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0])
    warped = warp_logits(logits, DecodingConfig(temperature=0.5, top_k=4, top_p=0.999))
    assert torch.equal(warped.isfinite(), torch.tensor([True, True, True, True, False]))
    assert torch.allclose(warped[:4], logits[:4] / 0.5)
    assert warp_logits(logits, DecodingConfig(temperature=1.0, top_p=0.5)).isfinite().tolist() == [
        True, False, False, False, False]  # p(4.0) = 0.64 reaches 0.5 alone
    assert warp_logits(logits, DecodingConfig(temperature=1.0, top_p=0.7)).isfinite().tolist() == [
        True, True, False, False, False]  # 0.64 + 0.23


def test_min_p_keeps_the_tokens_near_the_most_likely_after_temperature():
    logits = torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0])  # p_i / p_max = e^-i (temperature 1)
    assert warp_logits(logits, DecodingConfig(temperature=1.0, min_p=0.3)).isfinite().tolist() == [
        True, True, False, False, False]
    assert warp_logits(logits, DecodingConfig(temperature=0.5, min_p=0.3)).isfinite().tolist() == [
        True, False, False, False, False]  # (e^-2 < 0.3 once sharpened)
    assert torch.equal(warp_logits(logits, DecodingConfig(temperature=1.0, min_p=0.0)), logits)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(HamburgerError, match="min_p"):
            DecodingConfig(min_p=bad).validate()


@pytest.mark.parametrize("kind", ENGINES)
def test_min_p_one_samples_the_greedy_answer_in_every_engine(kind, char_tokenizer):
    """min_p 1 keeps only the most likely token: a sampled row (micro tokens, drafts and verify's draws alike) gives the
    greedy row's tokens and groups, where the same seed without it does not."""
    cfg = dict(max_new_tokens=24, confidence=0.5)
    configs = [DecodingConfig(**cfg), DecodingConfig(**cfg, temperature=1.0, seed=3, min_p=1.0),
               DecodingConfig(**cfg, temperature=1.0, seed=3)]
    greedy, held, free = engine_of(kind, char_tokenizer, [PROMPTS[1]] * 3, configs).run()
    assert (held.token_ids, held.groups) == (greedy.token_ids, greedy.groups) and free.token_ids != greedy.token_ids


def test_draw_each_gives_each_sampled_row_its_distribution():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    cfgs = [DecodingConfig(temperature=0.7, top_p=0.9, seed=1), DecodingConfig(),
            DecodingConfig(temperature=1.3, top_k=5, seed=2)]
    tokens, dists = draw_each(logits, cfgs, [c.make_generator() for c in cfgs])
    assert dists[1] is None and tokens[1] == logits[1].argmax()
    for b in (0, 2):
        assert torch.equal(dists[b], warped_probs(logits[b], cfgs[b])) and dists[b][tokens[b]] > 0
    assert torch.equal(choose_tokens(logits, cfgs, [c.make_generator() for c in cfgs]), tokens)  # same seeds


ROW_SETTINGS = [DecodingConfig(temperature=0.7, top_p=0.9), DecodingConfig(), DecodingConfig(temperature=1.3, top_k=5),
                DecodingConfig(temperature=1.0, top_k=40, top_p=0.8, min_p=0.05), DecodingConfig(temperature=2.0),
                DecodingConfig(temperature=0.5, min_p=0.2), DecodingConfig(temperature=1.0, top_p=0.3)]


def test_warp_rows_warps_each_row_as_alone():
    logits = torch.randn(len(ROW_SETTINGS), 300, generator=torch.Generator().manual_seed(1)) * 3
    warped = warp_rows(logits, **row_settings(ROW_SETTINGS))
    for b, cfg in enumerate(ROW_SETTINGS):
        assert torch.equal(warped[b], logits[b] if cfg.greedy else warp_logits(logits[b], cfg))
    assert torch.equal(warp_rows(logits[2:4], **row_settings(ROW_SETTINGS[2:4])), warped[2:4])


def test_draw_rows_draws_what_sample_draws_from_each_rows_distribution():
    """At the same uniform a row's token is `sample`'s from its `warped_probs` (greedy rows: the argmax), in any
    batch."""
    g = torch.Generator().manual_seed(2)
    for _ in range(20):
        logits = torch.randn(len(ROW_SETTINGS), 300, generator=g) * 3
        seeds = torch.randint(1 << 30, (len(ROW_SETTINGS),), generator=g).tolist()
        uniform = torch.cat([torch.rand(1, generator=torch.Generator().manual_seed(s), dtype=torch.float64)
                             for s in seeds])
        drawn = draw_rows(logits, uniform=uniform, **row_settings(ROW_SETTINGS))
        for b, (cfg, seed) in enumerate(zip(ROW_SETTINGS, seeds)):
            alone = int(logits[b].argmax()) if cfg.greedy else \
                sample(warped_probs(logits[b], cfg), torch.Generator().manual_seed(seed))
            assert int(drawn[b]) == alone
        assert torch.equal(draw_rows(logits[3:], uniform=uniform[3:], **row_settings(ROW_SETTINGS[3:])), drawn[3:])


def test_the_device_draw_takes_the_host_driven_draws_tokens():
    """`draw_tokens` (sorted top-p, no host sync) and `draw_rows` invert the same vocabulary-order CDF: at the same
    uniforms they give the same tokens (the logits hold no ties, and no draw lands within rounding of an edge)."""
    g = torch.Generator().manual_seed(3)
    for _ in range(20):
        logits = torch.randn(len(ROW_SETTINGS), 300, generator=g) * 3
        uniform = torch.rand(len(ROW_SETTINGS), generator=g, dtype=torch.float64)
        settings = row_settings(ROW_SETTINGS)
        assert torch.equal(draw_tokens(logits, uniform=uniform, **settings), draw_rows(logits, uniform=uniform,
                                                                                       **settings))


def test_sample_draws_its_distribution_and_never_a_zero_probability_token():
    """`sample`'s inverse-CDF draw: the frequencies of 40,000 draws match the probabilities (chi-square, 6 degrees of
    freedom, p > 0.001), tokens of probability 0 (first, inside, last) never come, and a seed repeats its draws."""
    probs = torch.tensor([0.0, 0.05, 0.3, 0.0, 0.15, 0.1, 0.2, 0.15, 0.05, 0.0])
    g = torch.Generator().manual_seed(7)
    draws = [sample(probs, g) for _ in range(40_000)]
    counts = torch.bincount(torch.tensor(draws), minlength=len(probs)).double()
    assert counts[probs == 0].sum() == 0
    expected = probs[probs > 0].double() * len(draws)
    chi2 = float(((counts[probs > 0] - expected) ** 2 / expected).sum())
    assert chi2 < 22.46  # the 0.999 quantile of chi-square with 6 degrees of freedom
    again = torch.Generator().manual_seed(7)
    assert [sample(probs, again) for _ in range(100)] == draws[:100]
    assert sample(torch.tensor([0.0, 0.0, 1.0]), g) == 2 and sample(torch.tensor([1.0, 0.0, 0.0]), g) == 0
