"""Predicted outputs (`engine/prediction.py`): drafts from a request's predicted answer, followed by position; in
verify mode the answer stays the base's, and a prediction the answer follows saves base forwards."""

import pytest

from hamburger.engine.prediction import Prediction
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy
from tests.verify_helpers import FOLDINGS, drafting_model, folding_model


def test_it_follows_the_answer_through_the_prediction():
    p = Prediction([10, 11, 12, 13, 14, 15, 16, 17, 18, 19], most=3)
    assert p.propose([], 100) == [10, 11, 12]  # the answer starts: its start
    assert p.propose([10, 11], 100) == [12, 13, 14]  # it kept two
    assert p.propose([10, 11, 12, 13, 14, 15], 2) == [16, 17]  # all three and one more; at most the room
    # an edit: the answer takes a token the prediction does not hold there, then goes on as it does further on
    answer = [10, 11, 12, 13, 14, 15, 99]
    assert p.propose(answer, 100) == [] and p.at is None
    assert p.propose(answer + [17, 18], 100) == [19]  # found again after its last 2 tokens, further on
    assert p.propose(answer + [17, 18, 19], 100) == []  # its end
    assert p.propose([5, 6], 0) == []


def test_it_looks_for_the_answer_further_on_never_behind():
    """After an edit the answer's tail is looked for from where the last drafts began: a pattern that repeats is
    found at its next occurrence, not at the text's first."""
    text = [1, 2, 3, 7, 1, 2, 3, 8, 1, 2, 3, 9]
    p = Prediction(text, most=4)
    assert p.propose([1, 2, 3, 7, 1], 100) == [2, 3, 8, 1]
    assert p.propose([1, 2, 3, 7, 1, 2, 3, 5, 1, 2, 3], 100) == [9]  # (not [7, ...], which is behind)
    assert Prediction([4, 5, 6], min_ngram=2).propose([9, 6], 10) == []  # one token in common is no match


def test_verify_with_a_prediction_is_the_base_and_saves_forwards(char_tokenizer):
    """Greedy, the answer is the one without a prediction, token for token (sampled, a prediction's draft is certain,
    q one-hot, as a lookup's: `test_verify.py` checks that such drafts keep the base's distribution); the base's own
    answer as the prediction is kept whole and takes fewer forwards; a wrong one costs no token; the drafts kept and
    refused are counted."""
    model = drafting_model("llama", "random")
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.2, ignore_eos=True)
    plain = VerifyGeneration(model, char_tokenizer, PROMPTS[:2], cfg, draft=0).run()
    assert [r.token_ids for r in plain] == [hf_greedy(model.base, p, 30) for p in PROMPTS[:2]]
    # right for its first 4 tokens, then wrong: its drafts after those are refused, and cost no token
    partly = plain[1].token_ids[:4] + [(t * 7 + 1) % 90 + 4 for t in plain[1].token_ids[4:]]
    configs = [DecodingConfig(**{**vars(cfg), "prediction": plain[0].token_ids}),
               DecodingConfig(**{**vars(cfg), "prediction": partly})]
    predicted = VerifyGeneration(model, char_tokenizer, PROMPTS[:2], configs, draft=0).run()
    assert [r.token_ids for r in predicted] == [r.token_ids for r in plain]
    right, off = predicted
    assert right.forwards < plain[0].forwards / 3 and right.rejected_prediction_tokens <= 1
    assert right.accepted_prediction_tokens == right.tokens - right.forwards  # (every kept draft came from it)
    assert off.accepted_prediction_tokens >= 3 and off.rejected_prediction_tokens > 0
    assert off.forwards >= plain[1].forwards - off.accepted_prediction_tokens
    assert plain[0].accepted_prediction_tokens == plain[0].rejected_prediction_tokens == 0
    with pytest.raises(HamburgerError, match="prediction"):
        DecodingConfig(prediction=["a"]).validate()


def test_its_drafts_grow_while_they_are_all_kept():
    """A step drafts `first` tokens, twice as many after one whose drafts were all kept (and a token after them), up
    to `most`, and `first` again after one that refused some; never more than the room or the prediction's rest."""
    p = Prediction(list(range(100, 200)), first=4, most=16)
    assert p.propose([], 100) == list(range(100, 104))
    assert len(p.propose(list(range(100, 105)), 100)) == 8  # all 4 and one more
    assert len(p.propose(list(range(100, 114)), 100)) == 16
    assert len(p.propose(list(range(100, 131)), 100)) == 16  # (at most `most`)
    assert p.propose(list(range(100, 135)), 100) == list(range(135, 139))  # kept 4 of 16: back to 4
    assert len(p.propose(list(range(100, 140)), 3)) == 3  # kept all 4: 8, but the room holds 3
    assert p.propose(list(range(100, 144)), 100) == list(range(144, 160))  # kept all 3: twice 8
    assert p.propose(list(range(100, 196)), 100) == list(range(196, 200))  # the prediction's rest


def test_a_prediction_followed_whole_takes_few_forwards_and_shares_a_batch(char_tokenizer):
    """The base's own answer as the prediction: 100 tokens in drafts of 10, 20, 40 and the rest (the room), one
    forward each after the prefill's; two such rows in a batch draft at most 64 / 2 = 32 each. The answers stay the
    base's."""
    model = drafting_model("llama", "random")
    cfg = DecodingConfig(max_new_tokens=100, confidence=0.2, ignore_eos=True)
    plain = VerifyGeneration(model, char_tokenizer, PROMPTS[:2], cfg, draft=0).run()
    configs = [DecodingConfig(**{**vars(cfg), "prediction": r.token_ids}) for r in plain]
    alone = VerifyGeneration(model, char_tokenizer, PROMPTS[:1], configs[:1], draft=0).run()[0]
    assert alone.token_ids == plain[0].token_ids and alone.forwards == 5
    together = VerifyGeneration(model, char_tokenizer, PROMPTS[:2], configs, draft=0).run()
    assert [r.token_ids for r in together] == [r.token_ids for r in plain]
    assert [r.forwards for r in together] == [6, 6]  # 10, 20, 32, 32 and the last token alone


def test_with_a_fold_a_step_drafts_at_most_ten_from_the_prediction(char_tokenizer):
    """A fold's forward reads at its later positions history a token-by-token decode would have folded by then, so with
    a fold the prediction's drafts do not grow (10 a step: 11 tokens a forward at most); without one they do."""
    model = folding_model()
    cfg = DecodingConfig(max_new_tokens=100, confidence=0.2, ignore_eos=True)
    for fold, most in ((FOLDINGS["forwards 5"], 11), (None, 41)):  # (10, 20, 40 drafts and a token each)
        plain = VerifyGeneration(model, char_tokenizer, PROMPTS[:1], cfg, draft=0, fold=fold).run()[0]
        predicted = VerifyGeneration(model, char_tokenizer, PROMPTS[:1], DecodingConfig(
            **{**vars(cfg), "prediction": plain.token_ids}), draft=0, fold=fold).run()[0]
        assert predicted.accepted_prediction_tokens > 50 and max(predicted.groups) == most, (fold, predicted.groups)
