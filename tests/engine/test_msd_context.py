"""The MSD's context (`HamburgerConfig.msd_context`): it also reads the base's final states at the w slots before the
one whose features it reads. Decoding (every layout, batches, chunked prefill, re-reads, verify mode) gives it the
same vectors that training does."""

import pytest
import torch

from hamburger.core.model import context_places
from hamburger.core.packing import TrainBatch
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from hamburger.train.objective import msd_forward
from tests.helpers import PROMPTS, assert_engine_matches_training_forward, tiny_hamburger

W = 3  # more than the shortest prompt's slots before its last: the first slot repeats there


def context_model(family: str = "llama", stop_bias: float = -3.0, **kw):
    model = tiny_hamburger(family, seed=3, msd_context=W, **kw)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(stop_bias)  # -3: long groups at confidence 0.5
    return model


def test_context_places_are_the_slots_before_oldest_first():
    rows, cols = context_places((torch.tensor([0, 1, 1]), torch.tensor([5, 1, 0])), 3)
    assert rows.tolist() == [[0, 0, 0], [1, 1, 1], [1, 1, 1]]
    assert cols.tolist() == [[2, 3, 4], [0, 0, 0], [0, 0, 0]]


def test_msd_features_put_the_context_before_the_taps():
    model = context_model()
    final, features = torch.randn(2, 7, 16), torch.randn(2, 7, 3, 16)
    out = model.msd_features(final, features, (torch.tensor([1, 0]), torch.tensor([4, 1])))
    assert out.shape == (2, W + 3, 16)
    assert torch.equal(out[0], torch.cat([final[1, 1:4], features[1, 4]]))
    assert torch.equal(out[1], torch.cat([final[0, [0, 0, 0]], features[0, 1]]))
    model.config.msd_context = 0
    assert torch.equal(model.msd_features(final, features, (torch.tensor([1]), torch.tensor([4]))), features[1, 4][None])


@pytest.mark.parametrize("tail", [0, 1])
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_engine_equals_the_training_forward(tail, family, char_tokenizer):
    assert_engine_matches_training_forward(tiny_hamburger(family, seed=3, msd_context=W, single_tail=tail),
                                           char_tokenizer)


def test_the_context_changes_the_micro_logits(char_tokenizer):
    """Not a no-op: the same weights without the context give other micro-token logits (the skip path's are the same)."""
    model = context_model()

    def logits(prompt):
        run = Generation(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=12, confidence=0.5),
                         trace_logits=True)
        return run.run()[0], torch.stack(run.logits[0])

    res, with_context = logits(PROMPTS[1])
    model.config.msd_context = 0
    plain_res, plain = logits(PROMPTS[1])
    assert res.groups[0] > 1 and plain_res.token_ids[:2] == res.token_ids[:2]
    assert torch.equal(plain[0], with_context[0])  # the first token: the base's own
    assert not torch.allclose(plain[1], with_context[1])  # the first micro token: the MSD's


def test_batches_and_chunked_prefill_equal_single_runs(char_tokenizer):
    model = context_model()
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.5)
    single = [generate(model, char_tokenizer, p, cfg) for p in PROMPTS]
    assert max(max(r.groups) for r in single) > 1
    for chunk in (None, 1, 2):
        batch = Generation(model, char_tokenizer, PROMPTS, cfg, prefill_chunk=chunk).run()
        assert [(r.token_ids, r.groups) for r in batch] == [(r.token_ids, r.groups) for r in single], chunk


def test_a_reread_group_gives_the_context_of_single_slots(char_tokenizer):
    """reread 1.0 reads every merged group again one slot per token: the answer's every logit is then that of the
    unmerged base and the MSD on it (stage msd's teacher-forced forward on the answer's own groups). Groups of every
    size: a short one's context reaches back before it."""
    model = context_model(stop_bias=-0.5)
    sizes = set()
    for prompt in PROMPTS:
        run = Generation(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=20, confidence=0.55, reread=1.0),
                         trace_logits=True)
        res = run.run()[0]
        sizes.update(res.groups[:-1])  # (the last group is never fed)
        with torch.no_grad():
            out = msd_forward(model, TrainBatch([prompt], [res.token_ids], [res.groups]), "groups")
        torch.testing.assert_close(out.token_logits, torch.stack(run.logits[0]), rtol=1e-4, atol=1e-4)
    assert {1, 2, 4} <= sizes


def test_verify_drafts_from_the_context_of_the_unmerged_answer(char_tokenizer, monkeypatch):
    """Drafts that the base rejects (a perturbed MSD) roll back: the context is the kept tokens' slots only."""
    model = context_model()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.decoder.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.3)
    seen = []
    draft = VerifyGeneration._draft

    def recording(self, hidden, features, rows):
        seen.append((rows[0].fed, features[0].clone()))
        return draft(self, hidden, features, rows)

    monkeypatch.setattr(VerifyGeneration, "_draft", recording)
    prompt = PROMPTS[0]
    res = VerifyGeneration(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=20, confidence=0.5)).run()[0]
    assert len(seen) > 3 and any(a > 0 for a in res.accepted) and any(a < W for a in res.accepted)
    ids = torch.tensor([prompt + res.token_ids])
    with torch.no_grad():
        final, features = model.base_forward(model.embed(ids), torch.arange(ids.shape[1])[None], None)
    for fed, got in seen:  # the pending token goes in at position fed: the features are those of the slot before
        want = model.msd_features(final, features, (torch.tensor([0]), torch.tensor([fed - 1])))[0]
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_msd_context_is_checked():
    with pytest.raises(HamburgerError, match="msd_context"):
        tiny_hamburger(msd_context=-1)
