"""What the knob gates (`core.config.GATES`): the stop head's word before a micro token, or the MSD's probability
of the micro token itself."""

import math

import pytest
import torch

from hamburger.core.config import HamburgerConfig
from hamburger.engine.generate import Generation, _Row
from hamburger.engine.micro import HostMicroLoop
from hamburger.engine.sampling import DecodingConfig, knob_gates
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy, tiny_hamburger


def token_prob_model(seed: int = 3):
    return tiny_hamburger("llama", seed=seed, gate="token_prob")


def random_states(model, n: int, seed: int):
    """``n`` random base final states [n, d] and MSD feature stacks [n, m, d] to start micro loops from."""
    g = torch.Generator().manual_seed(seed)
    d = model.config.hidden_size
    return torch.randn(n, d, generator=g), torch.randn(n, model.config.num_features, d, generator=g)


def rule_groups(model, hidden, features, floor, prefilter=0.0, going=None):
    """The token_prob rule, computed teacher-forced with the training-time MSD (`micro_hidden`, no cache):
    token 1 from the skip path, then each MSD token while its probability is >= floor, up to max_steps; with a
    ``prefilter`` the MSD is asked only while the stop head's 1 - p_stop after the last token is >= prefilter
    (each of those values goes to the list ``going``)."""
    groups = []
    for h, f in zip(hidden, features):
        state, tokens = h, [int(model.lm_head(h).argmax())]
        while len(tokens) < model.config.max_steps:
            p_continue = float(torch.sigmoid(-model.stop_head(state[None], model.embed(torch.tensor(tokens[-1:])))))
            if going is not None:
                going.append(p_continue)
            if p_continue < prefilter:
                break
            state = model.micro_hidden(f[None], torch.tensor([tokens]))[0, -1]
            probs = model.lm_head(state).float().softmax(-1)
            if float(probs.max()) < floor:
                break
            tokens.append(int(probs.argmax()))
        groups.append(tokens)
    return groups


def micro_loop_groups(model, hidden, features, confidence):
    rows = [_Row([1, 2], DecodingConfig(max_new_tokens=50, confidence=confidence), 0.9, None, model.config.gate,
                 model.config.prefilter) for _ in range(len(hidden))]
    HostMicroLoop(model, eos=[])(hidden, features, rows)
    return [r.group for r in rows]


def test_token_prob_gate_takes_a_micro_token_iff_the_msd_gives_it_the_knob():
    model = token_prob_model()
    hidden, features = random_states(model, 12, seed=0)
    with torch.no_grad():
        everything = rule_groups(model, hidden, features, 0.0)
        probs = sorted(float(model.lm_head(model.micro_hidden(f[None], torch.tensor([t[:-1]]))[0, -1])
                             .float().softmax(-1).max()) for f, t in zip(features, everything))
        # between the two middle last-micro-token probabilities: some groups pass, some end early, and none sits on
        # the knob (where the batched loop's rounding, not the rule, would decide)
        knob = (probs[len(probs) // 2 - 1] + probs[len(probs) // 2]) / 2
        expected = rule_groups(model, hidden, features, knob)
        got = micro_loop_groups(model, hidden, features, knob)
    assert got == expected
    assert {len(t) for t in expected} > {1} and min(len(t) for t in expected) < model.config.max_steps
    assert all(len(t) == model.config.max_steps for t in everything)  # the stop head is not consulted


def lower_the_stop_head(model, factor: float) -> None:
    """Shift the stop head's logit so its 1 - p_stop falls about ``factor`` times (random weights put it near 0.5)."""
    with torch.no_grad():
        model.stop_head.net[-1].bias += math.log(factor)


def test_prefilter_asks_the_msd_only_while_the_stop_head_gives_the_group_prefilter_times_the_knob():
    model = token_prob_model()
    hidden, features = random_states(model, 16, seed=1)
    vocab = model.base.config.vocab_size
    knob = 1.0 / vocab  # no MSD token fails it: the largest of V probabilities is >= 1 / V
    lower_the_stop_head(model, 8.0 * vocab)  # the stop head's values now fall around and below the knob
    with torch.no_grad():
        going = []
        unfiltered_rule = rule_groups(model, hidden, features, knob, prefilter=0.0, going=going)
        values = sorted(going)
        least = (values[len(values) // 2] + values[len(values) // 2 + 1]) / 2  # between two stop-head values
        assert least < knob
        expected = rule_groups(model, hidden, features, knob, prefilter=least)
        model.config.prefilter = least / knob
        got = micro_loop_groups(model, hidden, features, knob)
        model.config.prefilter = 0.0
        unfiltered = micro_loop_groups(model, hidden, features, knob)
    assert got == expected and unfiltered == unfiltered_rule
    lengths = [len(t) for t in got]
    assert min(lengths) < model.config.max_steps and max(lengths) > 1  # it turns some merges down, not all
    assert all(len(t) == model.config.max_steps for t in unfiltered)
    assert all(t == u[:len(t)] for t, u in zip(got, unfiltered))  # it only ever ends a group earlier


def test_prefilter_device_loop_equals_host_loop_and_zero_is_no_prefilter(char_tokenizer):
    model = token_prob_model()
    lower_the_stop_head(model, 40.0)  # 1 - p_stop now near 0.02, the first row's knob
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=c) for n, c in ((24, 0.02), (24, 0.05), (9, 1.0))]
    plain = Generation(model, char_tokenizer, PROMPTS, cfgs).run()
    model.config.prefilter = 1.0
    host = Generation(model, char_tokenizer, PROMPTS, cfgs).run()
    device = Generation(model, char_tokenizer, PROMPTS, cfgs, micro_loop="device").run()
    assert [(r.groups, r.token_ids) for r in device] == [(r.groups, r.token_ids) for r in host]
    assert sum(len(r.groups) for r in host) > sum(len(r.groups) for r in plain)  # fewer merges
    assert max(host[0].groups) > 1
    for r in host:  # a group went on only where the stop head gave it the knob (and the MSD gave the token the knob)
        start = 0
        for n in r.groups:
            assert all(p >= r.confidence for p in r.p_continue[start:start + n - 1])
            assert all(p >= r.confidence for p in r.token_probs[start + 1:start + n])
            start += n
    assert set(host[2].groups) == {1}


def test_token_prob_gate_at_knob_one_is_the_base_exactly(char_tokenizer):
    model = token_prob_model()
    for prompt in PROMPTS[:2]:
        res = Generation(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=20, confidence=1.0)).run()[0]
        assert res.token_ids == hf_greedy(model.base, prompt, 20) and set(res.groups) == {1}


def test_token_prob_gate_device_loop_equals_host_loop(char_tokenizer):
    """Ragged batch, per-row knobs (1.0 among them) and budgets: the on-device gate ends groups where the host's does."""
    model = token_prob_model()
    prompts = PROMPTS + [PROMPTS[1], PROMPTS[0]]
    cfgs = [DecodingConfig(max_new_tokens=n, confidence=c) for n, c in ((24, 0.02), (24, 0.05), (7, 0.02), (9, 1.0),
                                                                         (24, 1e-9))]
    host = Generation(model, char_tokenizer, prompts, cfgs).run()
    device = Generation(model, char_tokenizer, prompts, cfgs, micro_loop="device").run()
    assert [r.groups for r in device] == [r.groups for r in host]
    assert [r.token_ids for r in device] == [r.token_ids for r in host]
    assert set(host[3].groups) == {1} and max(host[4].groups) == model.config.max_steps
    for r in host:  # every micro token passed the gate
        start = 0
        for n in r.groups:
            assert all(p >= r.confidence for p in r.token_probs[start + 1:start + n])
            start += n


def test_knob_gates_and_the_config_field():
    assert knob_gates(0.9, "stop_head") == (math.log(9), 0.0)
    assert knob_gates(0.9, "token_prob") == (-math.inf, 0.9)
    assert knob_gates(1.0, "token_prob") == (math.inf, 0.0)
    assert knob_gates(0.8, "token_prob", 0.25) == (pytest.approx(math.log(0.25)), 0.8)  # 0.25 x the knob: 0.2
    assert knob_gates(0.4, "token_prob", 0.25)[0] == pytest.approx(math.log(0.1 / 0.9))  # it moves with the knob
    assert knob_gates(0.9, "stop_head", 0.2) == (math.log(9), 0.0)  # the stop head gate ignores it
    assert HamburgerConfig.from_dict({"max_steps": 4}).prefilter == 0.0
    HamburgerConfig(prefilter=1.0).validate()  # the stop head must give the group the knob itself
    with pytest.raises(HamburgerError, match="prefilter must be in"):
        HamburgerConfig(prefilter=1.5).validate()
    assert HamburgerConfig.from_dict({"max_steps": 4}).gate == "stop_head"  # saved before the field existed
    with pytest.raises(HamburgerError, match="gate must be one of"):
        HamburgerConfig(gate="entropy").validate()


def test_gate_ranking_counts_every_micro_token_and_its_auroc_is_exact():
    from benchmarks.gate_ranking import auroc, micro_signals, ranking
    from hamburger.train.batching import Row

    assert auroc([0.9, 0.8, 0.3], [True, True, False]) == 1.0
    assert auroc([0.3, 0.5, 0.5, 0.9], [True, True, False, False]) == 0.125  # one tie: (0 + 0.5 + 0 + 0) / 4
    model = tiny_hamburger("llama", seed=5)
    rows = [Row([1, 40, 41], [50, 51, 52, 53, 54, 55, 56], [2, 1, 3, 1]), Row([1, 60], [61, 62, 63, 64], [1, 1, 2])]
    records = micro_signals(model, rows, batch_size=1)
    assert len(records) == 1 + 2 + 1  # tokens 2..k of the groups of 2, 3 and 2 tokens
    assert all(0 <= going <= 1 and 0 < top <= 1 for _, going, top in records)
    result = ranking(records)
    assert result["micro_tokens"] == 4 and result["token_prob"]["thresholds"][0]["threshold"] == 0.5
