"""Penalties and logit bias (`engine/penalties.py`): the arithmetic exactly; every engine's choices follow the adjusted
logits, greedy and sampled, for a group's first token and its micro tokens; transformers' repetition penalty and
sequence bias give the same greedy answers; the probabilities reported stay the model's."""

from collections import Counter

import pytest
import torch

from hamburger.engine.generate import Generation
from hamburger.engine.micro import _COMPILED, compile_micro_loop
from hamburger.engine.penalties import PenaltyBatch, Penalties, counted, penalize
from hamburger.engine.sampling import DecodingConfig, along as adjusted_along
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, tiny_long_group_model
from tests.verify_helpers import ENGINES, drafting_model, engine_of

PROMPT = PROMPTS[1]


def engine(kind: str, tokenizer, configs: list[DecodingConfig], trace=True):
    """`engine_of` with every row on ``PROMPT`` (and every emitted token's logits traced)."""
    return engine_of(kind, tokenizer, [PROMPT] * len(configs), configs, trace_logits=trace)


def reference(logits: torch.Tensor, prompt: list[int], answer: list[int], cfg: DecodingConfig) -> torch.Tensor:
    """The adjusted logits, written out token by token (float64)."""
    out = logits.double().clone()
    for t, b in cfg.logit_bias.items():
        out[t] += b
    if cfg.repetition_penalty != 1.0:
        for t in set(prompt) | set(answer):
            out[t] = out[t] / cfg.repetition_penalty if out[t] > 0 else out[t] * cfg.repetition_penalty
    for t, c in Counter(answer).items():
        out[t] -= cfg.presence_penalty + c * cfg.frequency_penalty
    return out


def test_the_arithmetic():
    """Bias first, then the repetition penalty (prompt and answer), then presence and frequency (answer only)."""
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0, -2.0])
    p = Penalties(0.5, 0.25, 2.0, {4: 10.0, 1: 3.0}, prompt_ids=[1], vocab=5, device=torch.device("cpu"))
    for t in (3, 2, 3):
        p.add(t)
    expected = torch.tensor([2.0, 1.0, 0.25 - 0.25 - 0.5, 1.5 - 0.5 - 0.5, 8.0])
    assert torch.equal(p(logits), expected)
    fresh = Penalties(0.5, 0.25, 2.0, {4: 10.0, 1: 3.0}, prompt_ids=[1], vocab=5, device=torch.device("cpu"))
    assert torch.equal(fresh(logits, after=[3, 2, 3]), expected)  # (drafts before a verify position count alike)
    along = adjusted_along(torch.stack([logits] * 2), [fresh], [3, 2, 3, 0], start=2)  # (positions 2, 3 of a step)
    assert torch.equal(along[0], fresh(logits, after=[3, 2])) and torch.equal(along[1], expected)
    assert torch.equal(reference(logits, [1], [3, 2, 3], DecodingConfig(
        presence_penalty=0.5, frequency_penalty=0.25, repetition_penalty=2.0, logit_bias={4: 10.0, 1: 3.0})).float(),
        expected)
    # a batch's rows without penalties keep their logits exactly
    batch = PenaltyBatch.stack([p, None], 5, torch.device("cpu"))
    adjusted = batch.adjust(torch.stack([logits, logits]), batch.counts)
    assert torch.equal(adjusted[0], expected) and torch.equal(adjusted[1], logits)
    assert torch.equal(penalize(logits, torch.zeros(5), torch.zeros(5, dtype=torch.bool), 0.0, 0.0, 1.0, None),
                       logits)


def test_min_tokens_holds_the_end_ids_back_until_the_answer_is_long_enough():
    """`min_tokens` m: the end ids get -inf while the answer (and the drafts before a position) hold fewer than m
    tokens, the other logits as they were; a batch's rows without it keep theirs."""
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0, -2.0])
    p = Penalties(0.0, 0.0, 1.0, {}, prompt_ids=[], vocab=5, device=torch.device("cpu"), min_tokens=2, ends=[1, 3])
    held = torch.tensor([2.0, -torch.inf, 0.5, -torch.inf, -2.0])
    assert torch.equal(p(logits), held) and torch.equal(p(logits, after=[0]), held)
    assert torch.equal(p(logits, after=[0, 4]), logits)
    p.add(0)
    assert torch.equal(p(logits), held) and torch.equal(p(logits, after=[2]), logits)
    batch = PenaltyBatch.stack([p, None], 5, torch.device("cpu"))
    adjusted = batch.adjust(torch.stack([logits, logits]), batch.counts)
    assert torch.equal(adjusted[0], held) and torch.equal(adjusted[1], logits)
    assert torch.equal(batch.adjust(torch.stack([logits, logits]), counted(batch.counts, torch.tensor([4, 4])))[0],
                       logits)


@pytest.mark.parametrize("kind", ENGINES)
def test_min_tokens_in_every_engine(kind, char_tokenizer):
    """With the end ids biased up an answer ends at once; with `min_tokens` 10 it ends soon after its tenth token,
    greedy and sampled, none of the first ten an end id (micro tokens and drafts alike); `ignore_eos` runs on."""
    ends = {2: 8.0, 3: 8.0}
    configs = [DecodingConfig(max_new_tokens=24, confidence=0.5, logit_bias=ends, **extra) for extra in (
        {}, {"min_tokens": 10}, {"min_tokens": 10, "temperature": 1.0, "seed": 3}, {"ignore_eos": True},
        {"ignore_eos": True, "min_tokens": 10})]
    plain, held, sampled, ignored, both = engine(kind, char_tokenizer, configs, trace=False).run()
    assert plain.finish_reason == "eos" and plain.tokens < 10
    for result in (held, sampled):
        assert result.finish_reason == "eos" and 10 < result.tokens < 16 and not {2, 3} & set(result.token_ids[:10])
    assert kind not in ("host", "device") or max(held.groups) > 1
    assert (ignored.finish_reason, ignored.tokens) == ("length", 24)
    assert both.token_ids == ignored.token_ids  # (end ids that end nothing are not held back, as vLLM's)
    assert DecodingConfig(min_tokens=1).penalized and not DecodingConfig(min_tokens=1, ignore_eos=True).penalized


@pytest.mark.parametrize("kind", ENGINES)
def test_min_tokens_holds_stop_strings_back_in_every_engine(kind, char_tokenizer):
    """As vLLM's: a stop string ends the answer only where it ends past the text of the first `min_tokens` tokens (one
    that began in that text counts); the tokens are those without it, greedy."""
    cfg = dict(max_new_tokens=24, confidence=0.5, ignore_eos=True, repetition_penalty=3.0)  # (an answer of many ids)
    plain = engine(kind, char_tokenizer, [DecodingConfig(**cfg)], trace=False).run()[0]
    text = plain.text
    shown = [len(char_tokenizer.decode(plain.token_ids[:m], skip_special_tokens=True)) for m in range(plain.tokens)]
    at = next(i for i in range(3, len(text)) if text[i] not in text[:i] and text[i - 1:i + 1] not in text[:i])
    before, within = shown.index(at), shown.index(at + 1)  # min_tokens whose text ends before / with text[at]
    pair = text[at - 1:at + 1]
    cases = [([text[at]], before), ([text[at]], within), ([pair], before), ([pair], within), ([pair, text[0]], before)]
    results = engine(kind, char_tokenizer, [DecodingConfig(**cfg, stop=stop, min_tokens=m) for stop, m in cases],
                     trace=False).run()
    for (stop, m), result in zip(cases, results):
        found = [(i, s) for s in stop if (i := text.find(s, max(0, shown[m] - len(s) + 1))) >= 0]
        later, ended_by = min(found) if found else (None, None)
        assert result.text == text[:later] and result.stop_reason == ended_by, (stop, m, result.text, text)
        assert result.finish_reason == ("stop" if found else "length")
        assert result.token_ids == plain.token_ids[:result.tokens]
    assert results[0].text == text[:at] and results[2].text == text[:at - 1]  # (the stop ends past them: it counts)
    assert results[1].text != text[:at] and results[3].text != text[:at - 1]  # (it ends within them: it does not)


@pytest.mark.parametrize("kind", ENGINES)
def test_min_tokens_text_is_read_as_the_answer_shows_special_tokens(kind, char_tokenizer):
    """The first `min_tokens` tokens' text, which a stop string must end past, is read as the answer's text is: with
    `skip_special_tokens` off it holds their special tokens' text too (here every token is BOS, "<s>")."""
    cfg = dict(max_new_tokens=5, confidence=0.5, logit_bias={1: 100.0}, stop=["s>"], min_tokens=2)
    shown, skipped = engine(kind, char_tokenizer, [DecodingConfig(**cfg, skip_special_tokens=False),
                                                   DecodingConfig(**cfg)], trace=False).run()
    assert (shown.text, shown.stop_reason) == ("<s><s><", "s>")  # (the first "s>" past the first two tokens' text)
    assert (skipped.text, skipped.finish_reason) == ("", "length")


@pytest.mark.parametrize("kind", ENGINES)
def test_stop_token_ids_end_the_answer_in_every_engine(kind, char_tokenizer):
    """A stop token id ends the answer where it first comes, a micro token or a draft as well (`ignore_eos` leaves it
    on), and `min_tokens` holds it back as it holds the end-of-sequence ids."""
    cfg = dict(max_new_tokens=24, confidence=0.5, ignore_eos=True, repetition_penalty=3.0)  # (an answer of many ids)
    plain = engine(kind, char_tokenizer, [DecodingConfig(**cfg)], trace=False).run()[0]
    at, stop = next((i, t) for i, t in enumerate(plain.token_ids) if i >= 3 and t not in plain.token_ids[:i])
    ended, held = engine(kind, char_tokenizer, [DecodingConfig(**cfg, stop_token_ids=[stop]),
                                                DecodingConfig(**cfg, stop_token_ids=[stop], min_tokens=at + 2)],
                         trace=False).run()
    assert (ended.token_ids, ended.finish_reason, ended.stop_reason) == (plain.token_ids[:at + 1], "eos", stop)
    assert plain.stop_reason is None and held.stop_reason in (None, stop)
    assert held.token_ids[:at] == plain.token_ids[:at] and stop not in held.token_ids[:at + 2]
    with pytest.raises(HamburgerError, match="stop_token_ids"):
        DecodingConfig(stop_token_ids=[-1]).validate()


def test_the_text_of_the_id_that_ended_the_answer_and_special_tokens(char_tokenizer):
    """As vLLM's: the text leaves out the stop token id that ended the answer unless `include_stop_str_in_output`, and
    special tokens unless `skip_special_tokens` is off."""
    model = tiny_long_group_model()
    cfg = dict(max_new_tokens=12, confidence=0.5, ignore_eos=True, repetition_penalty=3.0)
    plain = Generation(model, char_tokenizer, [PROMPT], DecodingConfig(**cfg)).run()[0]
    at = next(i for i, t in enumerate(plain.token_ids) if i >= 2 and t not in plain.token_ids[:i])
    stop = plain.token_ids[at]
    ended, kept = Generation(model, char_tokenizer, [PROMPT] * 2, [
        DecodingConfig(**cfg, stop_token_ids=[stop]),
        DecodingConfig(**cfg, stop_token_ids=[stop], include_stop_str_in_output=True)]).run()
    assert ended.token_ids == kept.token_ids == plain.token_ids[:at + 1]
    assert (ended.text, kept.text) == (char_tokenizer.decode(plain.token_ids[:at]),
                                       char_tokenizer.decode(plain.token_ids[:at + 1]))
    bos = char_tokenizer.bos_token_id
    special = dict(max_new_tokens=6, allowed_token_ids=[bos, 40], logit_bias={bos: 50.0})  # (an answer of <s>s)
    hidden, shown = Generation(model, char_tokenizer, [PROMPT] * 2, [
        DecodingConfig(**special), DecodingConfig(**special, skip_special_tokens=False)]).run()
    assert hidden.token_ids == shown.token_ids == [bos] * 6
    assert (hidden.text, shown.text) == ("", char_tokenizer.bos_token * 6)


def test_allowed_token_ids_ban_every_other_id():
    """`allowed_token_ids`: -inf for every other id, the allowed ids' logits adjusted as without it, in a batch too."""
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0, -2.0])
    p = Penalties(0.5, 0.0, 2.0, {1: 3.0}, prompt_ids=[1], vocab=5, device=torch.device("cpu"), allowed=[1, 2])
    free = Penalties(0.5, 0.0, 2.0, {1: 3.0}, prompt_ids=[1], vocab=5, device=torch.device("cpu"))
    for t in (2, 3):
        p.add(t)
        free.add(t)
    assert torch.equal(p(logits), torch.tensor([-torch.inf, 1.0, -0.25, -torch.inf, -torch.inf]))
    assert torch.equal(p(logits)[1:3], free(logits)[1:3])
    batch = PenaltyBatch.stack([p, None], 5, torch.device("cpu"))
    adjusted = batch.adjust(torch.stack([logits, logits]), batch.counts)
    assert torch.equal(adjusted[0], p(logits)) and torch.equal(adjusted[1], logits)


@pytest.mark.parametrize("kind", ENGINES)
def test_allowed_token_ids_in_every_engine(kind, char_tokenizer):
    """Every token of the answer, micro tokens and drafts alike, is one of `allowed_token_ids`, greedy and sampled;
    left out of them, the end ids never end it."""
    plain = engine(kind, char_tokenizer, [DecodingConfig(max_new_tokens=24, confidence=0.5)], trace=False).run()[0]
    allowed = sorted(set(plain.token_ids[1::2]) - {2, 3})[:3] + [40, 41]  # (some it chose, some it did not)
    configs = [DecodingConfig(max_new_tokens=24, confidence=0.5, allowed_token_ids=allowed, **extra)
               for extra in ({}, {"temperature": 1.0, "seed": 5}, {"repetition_penalty": 3.0})]
    results = engine(kind, char_tokenizer, configs, trace=False).run()
    for result in results:
        assert set(result.token_ids) <= set(allowed) and (result.finish_reason, result.tokens) == ("length", 24)
    assert kind not in ("host", "device") or max(results[0].groups) > 1
    assert len(set(results[1].token_ids)) > 1  # (sampling still chooses among them)


def test_allowed_token_ids_are_checked(char_tokenizer):
    for value in ([], [-1], [True], "1"):
        with pytest.raises(HamburgerError, match="allowed_token_ids"):
            DecodingConfig(allowed_token_ids=value).validate()
    with pytest.raises(HamburgerError, match="allowed_token_ids cannot go with"):
        DecodingConfig(allowed_token_ids=[1], grammar='start: "a"').validate()
    model = tiny_long_group_model()
    with pytest.raises(HamburgerError, match="allowed_token_ids names ids outside"):
        Generation(model, char_tokenizer, [PROMPT], DecodingConfig(allowed_token_ids=[1, 100]))
    eos = model.base.generation_config.eos_token_id
    eos = [eos] if isinstance(eos, int) else list(eos)
    with pytest.raises(HamburgerError, match="leaves no token to choose"):
        Generation(model, char_tokenizer, [PROMPT], DecodingConfig(allowed_token_ids=eos[:1], min_tokens=2))
    Generation(model, char_tokenizer, [PROMPT], DecodingConfig(allowed_token_ids=eos[:1] + [7], min_tokens=2))


CONFIGS = [DecodingConfig(max_new_tokens=24, confidence=0.5, repetition_penalty=3.0),
           DecodingConfig(max_new_tokens=24, confidence=0.5, presence_penalty=1.0, frequency_penalty=0.5),
           DecodingConfig(max_new_tokens=24, confidence=0.5, logit_bias={5: 6.0, 17: -100.0, 40: 2.5}),
           DecodingConfig(max_new_tokens=24, confidence=0.5)]


@pytest.mark.parametrize("kind", ENGINES)
def test_greedy_choices_are_the_argmax_of_the_adjusted_logits(kind, char_tokenizer):
    """Each token, micro tokens included, is the top of its logits adjusted by the answer before it; the row without
    penalties decodes as alone; the probabilities reported are the unadjusted ones."""
    gen = engine(kind, char_tokenizer, CONFIGS)
    results = gen.run()
    plain = results[-1]
    assert plain.token_ids == engine(kind, char_tokenizer, CONFIGS[-1:], trace=False).run()[0].token_ids
    assert kind not in ("host", "device") or max(results[0].groups) > 1  # (micro tokens are among them)
    for cfg, result, logits in zip(CONFIGS, results, gen.logits):
        assert len(logits) == result.tokens
        if cfg.penalized:
            assert result.token_ids != plain.token_ids  # (the test sees them act)
        for i, (token, prob, row) in enumerate(zip(result.token_ids, result.token_probs, logits)):
            adjusted = reference(row, PROMPT, result.token_ids[:i], cfg)
            assert adjusted[token] >= adjusted.max() - 1e-5, (i, token, int(adjusted.argmax()))
            assert prob == pytest.approx(float(row.softmax(-1)[token]), abs=1e-6)


@pytest.mark.parametrize("kind", ENGINES)
def test_a_banned_token_is_never_drawn(kind, char_tokenizer):
    """Sampled rows draw from the adjusted distribution: tokens biased by -100 never come, in a group's first token, a
    micro token or a verify step's draws (whose drafts come from the unadjusted micro-step decoder)."""
    free = DecodingConfig(max_new_tokens=32, confidence=0.5, temperature=1.0, seed=7)
    drawn = engine(kind, char_tokenizer, [free], trace=False).run()[0].token_ids
    banned = {t: -100.0 for t in set(drawn) - {2, 3}}  # (the end-of-sequence ids may still end an answer)
    results = engine(kind, char_tokenizer, [DecodingConfig(max_new_tokens=32, confidence=0.5, temperature=1.0, seed=s,
                                                           logit_bias=banned) for s in (7, 8)], trace=False).run()
    assert len(banned) >= 5
    for result in results:
        assert result.tokens and not set(result.token_ids) & set(banned)
        assert kind not in ("host", "device") or max(result.groups) > 1


@pytest.mark.parametrize("kind", ["hamburger", "verify"])
def test_confidence_one_gives_transformers_penalized_greedy_answer(kind, char_tokenizer):
    """Plain decoding with transformers' repetition penalty and sequence bias (one-token sequences) gives the same
    tokens as the engine's at confidence 1.0 (hamburger) and as lossless verify mode (the base's test of every draft
    reads the adjusted logits)."""
    bias = {5: 4.0, 44: -3.0, 60: 2.0}
    cfg = DecodingConfig(max_new_tokens=24, confidence=1.0 if kind == "hamburger" else None, repetition_penalty=1.3,
                         logit_bias=bias, ignore_eos=True)
    model = tiny_long_group_model() if kind == "hamburger" else drafting_model("llama")
    gen = Generation if kind == "hamburger" else VerifyGeneration
    for prompt in PROMPTS:
        ours = gen(model, char_tokenizer, [prompt], cfg).run()[0]
        out = model.base.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                  max_new_tokens=24, do_sample=False, repetition_penalty=1.3,
                                  sequence_bias={(t,): b for t, b in bias.items()}, eos_token_id=None,
                                  pad_token_id=0)
        assert ours.token_ids == out[0, len(prompt):].tolist()
        assert kind == "hamburger" or sum(ours.accepted) > 0  # (drafts were kept)


def test_the_compiled_device_loop_applies_them(char_tokenizer):
    model = tiny_long_group_model()
    eager = Generation(model, char_tokenizer, [PROMPT] * len(CONFIGS), CONFIGS, micro_loop="device").run()
    model.compile_decoding(mode=None, backend="aot_eager")
    compile_micro_loop(model, backend="aot_eager")
    try:
        compiled = Generation(model, char_tokenizer, [PROMPT] * len(CONFIGS), CONFIGS, static_cache=True,
                              micro_loop="device").run()
    finally:
        _COMPILED.pop(model)
    for e, c in zip(eager, compiled):
        assert (c.token_ids, c.groups) == (e.token_ids, e.groups)


@pytest.mark.parametrize("field,value", [
    ("presence_penalty", 2.5), ("frequency_penalty", -2.1), ("presence_penalty", float("nan")),
    ("repetition_penalty", 0.0), ("repetition_penalty", -1.0), ("repetition_penalty", float("inf")),
    ("logit_bias", {1: 101.0}), ("logit_bias", {-1: 1.0}), ("logit_bias", {"1": 1.0}), ("logit_bias", [1]),
    ("min_tokens", -1), ("min_tokens", 129), ("min_tokens", True), ("min_tokens", 2.0)])
def test_out_of_range_settings_are_refused(field, value):
    with pytest.raises(HamburgerError, match=field):
        DecodingConfig(**{field: value}).validate()


def test_min_tokens_cannot_hold_a_structured_answer_open():
    with pytest.raises(HamburgerError, match="min_tokens cannot hold"):
        DecodingConfig(min_tokens=4, json_schema={"type": "object"}).validate()


def test_a_bias_outside_the_vocabulary_is_refused(char_tokenizer):
    with pytest.raises(HamburgerError, match="outside the vocabulary"):
        Generation(tiny_long_group_model(), char_tokenizer, [PROMPT], DecodingConfig(logit_bias={100: 1.0}))
