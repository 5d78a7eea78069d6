"""Predicted outputs (`engine/prediction.py`): drafts from a request's predicted answer, followed by position; in
verify mode the answer stays the base's, and a prediction the answer follows saves base forwards."""

import pytest

from hamburger.engine.prediction import Prediction
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy
from tests.verify_helpers import drafting_model


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
