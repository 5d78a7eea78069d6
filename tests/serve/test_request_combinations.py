"""Request bodies in random combinations of the fields the server takes (OpenAI's and vLLM's), through what a request
goes through: parsing (`protocol.prepare`), the engine's checks before any header (`protocol.engine_checked`), the
mode's engine and the response body. Each is a 400 up front or an answer; never a refusal the engine makes late (which
a streamed answer could only tell in its stream) nor a crash. A fixed seed: the same bodies each run."""

import json
import random

from hamburger.core.checkpoint import load_checkpoint
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
from hamburger.engine.generate import Generation
from hamburger.engine.prompt import eos_ids
from hamburger.engine.verify import VerifyGeneration
from hamburger.serve.protocol import APIError, TokenLogprobs, completion_body, engine_checked, prepare, with_vllm_fields
from tests.helpers import save_tiny_chat_checkpoint

BODIES = 100
LETTERS = "abcdefg xyz"


def body(rng: random.Random, kind: str, few: list[int]) -> dict:
    """One request body of ``kind`` ("chat" or "completion"), each optional field present with some chance;
    `allowed_token_ids` drawn from ``few`` (end ids and the ids of "a" and "b", which `bad_words` may ban), so some
    bodies leave no token to choose."""
    out = {"max_tokens": rng.randint(1, 20)}
    if kind == "chat":
        out["messages"] = [{"role": "user", "content": "hi " + "".join(rng.choice(LETTERS) for _ in range(6))}]
    else:
        out["prompt"] = rng.choice(["Once upon", [5, 6, 7], ["ab", "cd"]])
    fields = {
        "temperature": lambda: rng.choice([0, 0.7, 1.5]), "top_p": lambda: rng.choice([0.5, 1.0]),
        "top_k": lambda: rng.randint(0, 5), "seed": lambda: rng.randint(0, 9), "n": lambda: rng.randint(1, 3),
        "stop": lambda: rng.choice(["a", ["x", "y z"]]), "presence_penalty": lambda: 1.0,
        "frequency_penalty": lambda: -1.0, "repetition_penalty": lambda: 2.0, "min_p": lambda: 0.1,
        "logit_bias": lambda: {str(rng.randint(0, 99)): rng.choice([-100, 50])},
        "min_tokens": lambda: rng.randint(0, 5),
        "ignore_eos": lambda: True, "stop_token_ids": lambda: [rng.randint(4, 99)],
        "allowed_token_ids": lambda: rng.sample(few, rng.randint(1, 2)), "bad_words": lambda: [rng.choice("abxyz")],
        "include_stop_str_in_output": lambda: True, "skip_special_tokens": lambda: False,
        "return_token_ids": lambda: True, "mode": lambda: rng.choice(["hamburger", "verify", "verify_fold"]),
        "confidence": lambda: rng.choice([0.5, 1.0]), "truncate_prompt_tokens": lambda: rng.randint(1, 5),
        "prompt_logprobs": lambda: rng.randint(0, 2), "logprobs": lambda: True if kind == "chat" else rng.randint(0, 3)}
    if kind == "chat":
        fields["response_format"] = lambda: {"type": "json_object"}
    else:
        fields["echo"] = lambda: True
    for name, value in fields.items():
        if rng.random() < (0.4 if name in ("allowed_token_ids", "min_tokens", "bad_words") else 0.2):
            out[name] = value()
    if kind == "chat" and out.get("logprobs"):
        out["top_logprobs"] = rng.randint(0, 3)
    return out


def test_request_bodies_in_random_combinations_are_refused_up_front_or_answered(tmp_path, char_tokenizer):
    model, tokenizer, _ = load_checkpoint(save_tiny_chat_checkpoint(tmp_path, char_tokenizer))
    eos = set(eos_ids(model, tokenizer))
    few = sorted(eos) + tokenizer("ab", add_special_tokens=False)["input_ids"]
    rng, answered, refused, checked = random.Random(5), 0, 0, 0
    for _ in range(BODIES):
        kind = rng.choice(["chat", "completion"])
        try:
            parsed = prepare(json.dumps(body(rng, kind, few)).encode(), kind, tokenizer, 512, 0.5)
        except APIError as e:
            assert e.status == 400
            refused += 1
            continue
        prompts, configs = parsed.answers()
        try:
            engine_checked(parsed.config, eos, model.vocab_size, tokenizer)
        except APIError as e:
            assert e.status == 400
            checked += 1
            continue
        if parsed.mode == "hamburger":  # (a `HamburgerError` from here on would reach the client late: it fails)
            run = Generation(model, tokenizer, prompts, configs)
        else:
            fold = parse_folding(DEFAULT_FOLD) if parsed.mode == "verify_fold" else None
            run = VerifyGeneration(model, tokenizer, prompts, configs, fold=fold)
        results = run.run()
        logprobs = None if parsed.logprobs is None else TokenLogprobs(kind, tokenizer, parsed.logprobs,
                                                                      parsed.config.skip_special_tokens)
        answer = with_vllm_fields(completion_body(kind, "id", "m", results, logprobs, parsed.echoes(), parsed.n,
                                                  parsed.tools), parsed, results, tokenizer)
        assert len(answer["choices"]) == len(prompts) and json.loads(json.dumps(answer)) == answer
        answered += 1
    assert answered > BODIES // 2 and refused and checked  # (every way taken)
