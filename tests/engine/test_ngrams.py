"""N-gram drafts (`engine/ngrams.py`): the table counted from answers, its proposals and file, and verify mode drafting
from it (the output stays the base's)."""

import pytest

from hamburger.core.checkpoint import load_checkpoint, save_checkpoint, write_draft_ngrams
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import NgramDrafts
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration
from hamburger.errors import HamburgerError
from tests.helpers import PROMPTS, hf_greedy, save_tiny_checkpoint
from tests.verify_helpers import drafting_model

CORPUS = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 3, 4, 5], [7, 2, 3, 9], [8, 8]]


def test_counted_continuations_and_their_thresholds():
    table = NgramDrafts.count(CORPUS, 10, orders=(3, 2), min_count=2, min_share=0.5)
    # [1, 2, 3] -> 4 (3 of 3); [2, 3, 4] -> 5 (2 of 3); [2, 3] -> 4 (3 of 4); [3, 4] -> 5; [1, 2] -> 3
    assert table.propose([1, 2, 3], 10) == [4, 5]  # then [3, 4, 5] and [4, 5] were never followed
    assert table.propose([9, 2, 3], 10) == [4, 5]  # [9, 2, 3] unseen: the 2-token context [2, 3] goes on
    assert table.propose([5, 5], 10) == [] and table.propose([3], 10) == []
    assert len(table) == 5  # [1, 2, 3] [2, 3, 4] and [1, 2] [2, 3] [3, 4]; [7, 2, 3] and [7, 2] were seen once
    strict = NgramDrafts.count(CORPUS, 10, orders=(3, 2), min_count=2, min_share=0.7)
    assert strict.propose([1, 2, 3], 10) == [4]  # [2, 3, 4] -> 5 is 2 of 3 < 0.7; [3, 4] -> 5 too
    assert strict.propose([9, 2, 3], 10) == [4]  # [2, 3] -> 4 is 3 of 4
    rare = NgramDrafts.count(CORPUS, 10, orders=(3, 2), min_count=4, min_share=0.5)
    assert rare.propose([1, 2, 3], 10) == [4]  # only [2, 3] (seen 4 times) is left


def test_proposals_stop_at_their_limits():
    table = NgramDrafts.count([[1, 2] * 8], 10, orders=(2,), min_count=1, min_share=0.5)
    assert table.propose([1, 2], 10) == [1, 2] * 5  # a cycle goes on to `tokens`
    assert table.propose([1, 2], 3) == [1, 2, 1] and table.propose([1, 2], 0) == []
    assert NgramDrafts.count([[1, 2] * 8], 10, orders=(2,), min_count=1, tokens=2).propose([2, 1], 10) == [2, 1]


def test_file_round_trip_and_refusals(tmp_path):
    table = NgramDrafts.count(CORPUS, 10, orders=(3, 2), min_count=2, tokens=7)
    table.save(tmp_path / "t.safetensors")
    back = NgramDrafts.load(tmp_path / "t.safetensors")
    assert back.tables == table.tables and back.vocab_size == 10 and back.tokens == 7 and back.orders == [3, 2]
    (tmp_path / "bad.safetensors").write_bytes(b"not a table")
    with pytest.raises(HamburgerError, match="not an n-gram draft table"):
        NgramDrafts.load(tmp_path / "bad.safetensors")
    with pytest.raises(HamburgerError, match="63-bit"):
        NgramDrafts(vocab_size=1 << 22, tables={3: {}})
    with pytest.raises(HamburgerError, match="min_share"):
        NgramDrafts.count(CORPUS, 10, min_share=0.0)


def test_a_checkpoint_carries_its_table(tmp_path, char_tokenizer):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    assert load_checkpoint(ckpt)[0].draft_ngrams is None
    write_draft_ngrams(ckpt, NgramDrafts.count(CORPUS, 100, orders=(3, 2)))
    loaded = load_checkpoint(ckpt)[0]
    assert loaded.draft_ngrams.propose([1, 2, 3], 10) == [4, 5]
    copy = save_checkpoint(loaded, tmp_path / "copy", load_checkpoint(ckpt)[2])  # a re-save keeps it
    assert load_checkpoint(copy)[0].draft_ngrams.tables == loaded.draft_ngrams.tables
    write_draft_ngrams(ckpt, NgramDrafts.count(CORPUS, 10, orders=(3, 2)))  # another vocabulary's table
    with pytest.raises(HamburgerError, match="vocabulary of 10 tokens"):
        load_checkpoint(ckpt)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_greedy_verify_with_ngram_drafts_equals_base_greedy(family, char_tokenizer):
    """A table counted over the base's own answers drafts where prompt lookup finds nothing: the output is still the
    base's greedy answer, in fewer forwards; a table of wrong continuations changes no token either."""
    model = drafting_model(family, init="random")
    answers = [hf_greedy(model.base, prompt, 30) for prompt in PROMPTS]
    own = NgramDrafts.count(answers, 100, orders=(3, 2), min_count=1)
    wrong = NgramDrafts(100, {2: {k: (t + 1) % 100 for k, t in own.tables[2].items()}})
    cfg = DecodingConfig(max_new_tokens=30, confidence=0.2)
    for prompt, answer in zip(PROMPTS, answers):
        runs = {}
        for name, table in (("none", None), ("own", own), ("wrong", wrong)):
            lookup = None if name == "wrong" else PromptLookup(tokens=4)  # (its drafts of a repeat would be right)
            runs[name] = VerifyGeneration(model, char_tokenizer, [prompt], cfg, lookup=lookup, ngrams=table).run()[0]
            assert runs[name].token_ids == answer
            assert runs[name].kv_slots == len(prompt) + runs[name].tokens - 1
        assert runs["own"].forwards < runs["none"].forwards
        assert sum(runs["wrong"].looked_up) > 0 and sum(a for a, up in zip(runs["wrong"].accepted,
                                                                            runs["wrong"].looked_up) if up) == 0


def test_cli_ngrams_keep_verify_lossless(tmp_path, char_tokenizer, capsys):
    """`hamburger generate --mode verify` drafts from the checkpoint's table by default (--ngrams N: up to N tokens;
    0: never) and prints the same tokens either way; --ngrams N > 0 without a table, or in mode hamburger, is refused
    with one line."""
    import json

    from hamburger.cli.main import main
    from tests.helpers import save_tiny_lora

    _, ckpt = save_tiny_lora(tmp_path, char_tokenizer)
    args = ["generate", "--model", str(ckpt), "--mode", "verify", "--json", "--raw", "--max-new-tokens", "24",
            "--lookup", "0"]
    assert main(args + ["--ngrams", "3", "xyz"]) == 1
    assert "no n-gram draft table" in capsys.readouterr().err
    assert main(args + ["xyz"]) == 0
    first = json.loads(capsys.readouterr().out)
    table = NgramDrafts.count([char_tokenizer("xyz")["input_ids"] + first["token_ids"]], 100, orders=(2,), min_count=1)
    write_draft_ngrams(ckpt, table)
    outs = []
    for extra in (["--ngrams", "0"], ["--ngrams", "2"], []):
        assert main(args + extra + ["xyz"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert first["token_ids"] == outs[0]["token_ids"] == outs[1]["token_ids"] == outs[2]["token_ids"]
    assert not any(outs[0]["looked_up"]) and any(outs[1]["looked_up"]) and any(outs[2]["looked_up"])
    assert max(d for d, up in zip(outs[1]["drafts"], outs[1]["looked_up"]) if up) <= 2
    assert outs[2]["forwards"] < outs[0]["forwards"]
    assert main(["generate", "--model", str(ckpt), "--mode", "hamburger", "--ngrams", "4", "--raw", "abc"]) == 1
