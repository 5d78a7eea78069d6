"""Request settings in random combinations, on every engine: whatever a request asks together (sampling, penalties,
bias, stop strings and ids, `min_tokens`, `ignore_eos`, `allowed_token_ids`, `bad_words`, log-probabilities), the
engine refuses it up front or answers within what each setting promises. A fixed seed: the same combinations each
run."""

import math
import random

from hamburger.engine.bad_words import spellings
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS
from tests.verify_helpers import ENGINES, engine_model, engine_of

TRIALS = 80
LETTERS = "abcdefghij xyz.!?"


def settings(rng: random.Random) -> dict:
    """One request's settings, each field present with some chance."""
    out = dict(max_new_tokens=rng.randint(1, 30), confidence=rng.choice([0.3, 0.5, 0.9, 1.0]))
    maybe = {
        "temperature": lambda: rng.choice([0.5, 1.0, 1.5]), "seed": lambda: rng.randint(0, 99),
        "top_k": lambda: rng.randint(1, 10), "top_p": lambda: rng.choice([0.5, 0.9]), "min_p": lambda: 0.1,
        "repetition_penalty": lambda: rng.choice([0.8, 1.5, 3.0]), "presence_penalty": lambda: rng.choice([-1.0, 1.0]),
        "frequency_penalty": lambda: rng.choice([-1.0, 1.0]),
        "stop": lambda: ["".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 3)))],
        "min_tokens": lambda: rng.randint(0, out["max_new_tokens"]), "ignore_eos": lambda: True,
        "stop_token_ids": lambda: [rng.randint(4, 99)], "allowed_token_ids": lambda: rng.sample(range(100), 3),
        "bad_words": lambda: ["".join(rng.choice(LETTERS.strip()) for _ in range(rng.randint(1, 2)))],
        "logit_bias": lambda: {rng.randint(0, 99): rng.choice([-100.0, 5.0, 100.0])},
        "include_stop_str_in_output": lambda: True, "top_logprobs": lambda: rng.randint(1, 3),
        "skip_special_tokens": lambda: False}
    for name, value in maybe.items():
        if rng.random() < 0.25:
            out[name] = value()
    return out


def held_to(result, cfg: DecodingConfig, ends: set[int], tokenizer) -> list[str]:
    """What ``result`` breaks of what ``cfg`` promises (empty: nothing)."""
    broken = []
    ids = result.token_ids
    if not (len(ids) == result.tokens == sum(result.groups) <= cfg.max_new_tokens):
        broken.append("length")
    if cfg.allowed_token_ids is not None and not set(ids) <= set(cfg.allowed_token_ids):
        broken.append("allowed_token_ids")
    last_ends, finish = bool(ids) and ids[-1] in ends, result.finish_reason
    if any(t in ends for t in ids[:-1]) or (finish == "eos") != last_ends and not (last_ends and finish == "stop"):
        broken.append("an end id")  # (an end id ends the answer: "eos", or "stop" where a string came before it)
    if result.finish_reason == "eos" and result.tokens <= cfg.min_tokens:
        broken.append("min_tokens")
    if not all(0.0 <= p <= 1.0 for p in result.token_probs) or any(math.isnan(p) for p in result.token_probs):
        broken.append("probabilities")
    if result.finish_reason == "stop" and (result.stop_reason not in cfg.stop or cfg.include_stop_str_in_output
                                           and not result.text.endswith(result.stop_reason)):
        broken.append("stop_reason")
    if cfg.stop and not cfg.min_tokens:  # (one within the first min_tokens tokens' text ends nothing)
        body = result.text[:-len(result.stop_reason)] if cfg.include_stop_str_in_output and result.stop_reason \
            else result.text
        if any(stop in body for stop in cfg.stop):
            broken.append("a stop string")
    if cfg.bad_words and cfg.allowed_token_ids is None:  # (with allowed ids a ban may yield)
        for seq in spellings(cfg.bad_words, tokenizer):
            if any(ids[i:i + len(seq)] == seq for i in range(len(ids) - len(seq) + 1)):
                broken.append("bad_words")
    return broken


def test_settings_in_random_combinations_hold_on_every_engine(char_tokenizer):
    rng = random.Random(7)
    models = {kind: engine_model(kind) for kind in ENGINES}
    answered = refused = 0
    for _ in range(TRIALS):
        kind = rng.choice(ENGINES)
        asked = [settings(rng) for _ in range(rng.randint(1, 3))]
        try:
            configs = [DecodingConfig(**a).validate() for a in asked]
            run = engine_of(kind, char_tokenizer, [rng.choice(PROMPTS) for _ in asked], configs, model=models[kind])
            results = run.run()
        except HamburgerError:  # (settings refused together, or by this engine: the device loop's)
            refused += 1
            continue
        answered += 1
        for a, cfg, result in zip(asked, configs, results):
            assert not held_to(result, cfg, set(cfg.ends(run.eos)), char_tokenizer), (kind, a, result)
    assert answered > TRIALS // 2 and refused  # (both ways taken)
