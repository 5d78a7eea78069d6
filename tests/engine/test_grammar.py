"""Structured output (`DecodingConfig.json_schema`, `engine/grammar.py`): in every engine, greedy and sampled, a group's
first token and its micro tokens alike, the answer is JSON the schema accepts, and ends there; bad schemas are refused."""

import json
import re
from dataclasses import replace

import pytest
import torch

from hamburger.engine.generate import Generation
from hamburger.engine.grammar import Grammar, compile_lark, compile_schema
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, tiny_long_group_model
from tests.verify_helpers import drafting_model, engine_of

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "n", "ok"],
          "properties": {"name": {"type": "string", "maxLength": 5}, "n": {"type": "integer", "minimum": 0,
                                                                            "maximum": 99},
                         "ok": {"type": "boolean"}}}


def accepted(text: str) -> bool:
    value = json.loads(text)
    return set(value) == {"name", "n", "ok"} and isinstance(value["name"], str) and len(value["name"]) <= 5 and \
        type(value["n"]) is int and 0 <= value["n"] <= 99 and isinstance(value["ok"], bool)


@pytest.mark.parametrize("kind", ["host", "verify", "verify_fold"])
def test_answers_hold_to_the_schema(kind, char_tokenizer):
    configs = [DecodingConfig(max_new_tokens=64, confidence=0.5, json_schema=SCHEMA),
               DecodingConfig(max_new_tokens=64, confidence=0.5, json_schema=SCHEMA, temperature=1.0, seed=4),
               DecodingConfig(max_new_tokens=64, confidence=0.5, json_schema=SCHEMA, temperature=1.0, seed=5),
               DecodingConfig(max_new_tokens=16, confidence=0.5)]
    results = engine_of(kind, char_tokenizer, [PROMPTS[1]] * len(configs), configs).run()
    for result in results[:3]:
        assert result.finish_reason == "eos" and accepted(result.text), result.text
    assert kind != "host" or max(g for r in results[:3] for g in r.groups) > 1  # (micro tokens are among them)
    free = results[3]
    assert not free.text.startswith("{")  # (the row without a schema is free: this tiny model writes no JSON)


@pytest.mark.parametrize("kind", ["host", "verify"])
def test_answers_hold_to_a_lark_grammar(kind, char_tokenizer):
    """`DecodingConfig.grammar`: an llguidance Lark grammar holds the answer as a schema does; bad ones are refused."""
    grammar = 'start: "id-" /[0-9]{2,4}/ ("!" | "?")'
    configs = [DecodingConfig(max_new_tokens=32, confidence=0.5, grammar=grammar),
               DecodingConfig(max_new_tokens=32, confidence=0.5, grammar=grammar, temperature=1.0, seed=3)]
    for result in engine_of(kind, char_tokenizer, [PROMPTS[1]] * 2, configs).run():
        assert result.finish_reason == "eos" and re.fullmatch(r"id-[0-9]{2,4}[!?]", result.text), result.text
    for bad, words in (("start: undefined_rule", "unusable grammar"), ("", "grammar must be a non-empty string")):
        with pytest.raises(HamburgerError, match=words):
            engine_of(kind, char_tokenizer, [PROMPTS[1]], [DecodingConfig(grammar=bad).validate()]).run()
    with pytest.raises(HamburgerError, match="not both"):
        DecodingConfig(grammar=grammar, json_schema=SCHEMA).validate()


@pytest.mark.parametrize("kind", ["host", "verify"])
def test_a_grammar_that_allows_the_text_changes_nothing(kind, char_tokenizer):
    """Tool choice "auto"'s grammar allows any text without a call: greedy answers that write none are the free ones,
    token for token. It leaves out only the special tokens but the end-of-sequence ones (the padding and BOS ids here),
    which text never holds: a sampled draw over what is left may differ."""
    from hamburger.serve.tools import parse_tools

    tools = parse_tools({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "auto"})
    allowed = Grammar(compile_lark(tools.grammar()), char_tokenizer, 100, [2, 3], torch.device("cpu")).allowed()
    assert (~allowed).nonzero().flatten().tolist() == [0, 1]
    config = DecodingConfig(max_new_tokens=24, confidence=0.5)
    free = engine_of(kind, char_tokenizer, PROMPTS, config).run()
    held = engine_of(kind, char_tokenizer, PROMPTS, replace(config, grammar=tools.grammar())).run()
    assert all("<tool_call>" not in r.text for r in free)
    assert [r.token_ids for r in held] == [r.token_ids for r in free]


def test_the_mask_reads_the_drafts_before_a_position(char_tokenizer):
    """A verify position after drafts sees the schema's state after them; after a draft it refuses, nothing is masked
    (that position is never tested)."""
    grammar = Grammar(compile_schema({"type": "integer"}), char_tokenizer, 100, [2, 3], torch.device("cpu"))
    digit, letter = (char_tokenizer.encode(c, add_special_tokens=False)[0] for c in "7a")
    logits = torch.zeros(100)
    assert torch.isfinite(grammar(logits))[digit] and not torch.isfinite(grammar(logits))[letter]
    after = grammar(logits, after=[digit])
    assert torch.isfinite(after)[2] and not torch.isfinite(after)[letter]  # (an integer may end after a digit)
    assert not torch.isfinite(grammar(logits))[2]  # (and the drafts were rolled back)
    assert torch.equal(grammar(logits, after=[letter]), logits)


def test_the_device_loop_and_bad_schemas_are_refused(char_tokenizer):
    model = tiny_long_group_model()
    with pytest.raises(HamburgerError, match="micro_loop 'host'"):
        Generation(model, char_tokenizer, [[1, 40]], DecodingConfig(json_schema=SCHEMA), micro_loop="device").run()
    for bad in ({"type": "frob"}, {"$ref": "#/missing"}):
        with pytest.raises(HamburgerError, match="unusable JSON schema"):
            Generation(model, char_tokenizer, [[1, 40]], DecodingConfig(json_schema=bad))
    running = Generation(model, char_tokenizer, [[1, 40]], DecodingConfig(max_new_tokens=3))
    with pytest.raises(HamburgerError, match="unusable JSON schema"):
        running.add([1, 41], DecodingConfig(json_schema={"type": "frob"}))
    assert len(running.run()) == 1  # (the refused request left no row behind)
    with pytest.raises(HamburgerError, match="json_schema must be a dict"):
        DecodingConfig(json_schema="{}").validate()
    assert compile_schema({"type": "object"})


def test_verify_mode_drafts_the_tokens_a_schema_forces(char_tokenizer):
    """Verify mode drafts the schema's forced tokens (its keys and punctuation) without the MSD; the base keeps them,
    and the answer stays the base's own masked greedy answer (plain decoding under the schema)."""
    model = drafting_model("llama", init="random")
    cfg = DecodingConfig(max_new_tokens=64, json_schema=SCHEMA)
    verified = VerifyGeneration(model, char_tokenizer, [PROMPTS[1]], cfg).run()[0]
    plain = Generation(model, char_tokenizer, [PROMPTS[1]], DecodingConfig(max_new_tokens=64, confidence=1.0,
                                                                            json_schema=SCHEMA)).run()[0]
    assert verified.token_ids == plain.token_ids and accepted(verified.text)
    forced = [a for a, by_lookup in zip(verified.accepted, verified.looked_up) if by_lookup]
    assert sum(forced) >= len('{"name":"",') and verified.tau > 1.5  # (keys, quotes and commas come free)


@pytest.mark.parametrize("draft_vocab", [None, torch.arange(0, 100, 2)])
def test_the_msd_drafts_only_what_the_schema_allows(draft_vocab, char_tokenizer):
    """The MSD's drafts under a schema are drawn among the tokens it allows next, over the full head or a draft
    vocabulary's rows, greedy and sampled; a row whose allowed tokens the draft vocabulary lacks drafts as it would."""
    model = drafting_model("llama", init="random")
    cfgs = [DecodingConfig(), DecodingConfig(temperature=1.0, seed=3), DecodingConfig()]
    gen = VerifyGeneration(model, char_tokenizer, [PROMPTS[0]] * 3, cfgs, draft_vocab=draft_vocab)
    hidden = torch.randn(3, model.base.config.hidden_size, generator=torch.Generator().manual_seed(0))
    digits = torch.zeros(100, dtype=torch.bool)
    digits[torch.tensor(char_tokenizer.encode("0123456789", add_special_tokens=False))] = True
    none = torch.zeros(100, dtype=torch.bool)
    with torch.no_grad():
        tokens, dists = gen._draw_drafts(hidden, cfgs, [None, torch.Generator().manual_seed(3), None],
                                         [digits, digits, none])
        free, _ = gen._draw_drafts(hidden, cfgs, [None, torch.Generator().manual_seed(3), None])
    assert digits[tokens[0]] and digits[tokens[1]] and tokens[2] == free[2]
    assert float(dists[1][~digits].sum()) == 0.0  # (the acceptance test's q is the masked distribution)
