"""Bad input gives clear errors (HamburgerError, one line in the CLI), not tracebacks."""

import pytest

from hamburger.core.base import resolve_base
from hamburger.cli.main import main
from hamburger.errors import HamburgerError
from hamburger.engine.generate import Generation
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from tests.helpers import tiny_hamburger


@pytest.mark.parametrize("kwargs, match", [
    (dict(confidence=0.0), "confidence"), (dict(confidence=1.5), "confidence"),
    (dict(max_new_tokens=-1), "max_new_tokens"), (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(top_p=0.0), "top_p"), (dict(top_p=1.2), "top_p"), (dict(temperature=-1.0), "temperature"),
    (dict(top_k=-3), "top_k"), (dict(stop=[""]), "stop"),
])
def test_invalid_generation_settings(kwargs, match):
    with pytest.raises(HamburgerError, match=match):
        DecodingConfig(**kwargs).validate()


def test_empty_and_too_long_prompts(char_tokenizer):
    model = tiny_hamburger("llama")
    with pytest.raises(HamburgerError, match="empty"):
        encode_prompt(char_tokenizer, "   ", raw=True)
    with pytest.raises(HamburgerError, match="empty"):
        Generation(model, char_tokenizer, [[]], DecodingConfig())
    with pytest.raises(HamburgerError, match="context"):
        Generation(model, char_tokenizer, [[5] * model.context_length], DecodingConfig())


def test_generation_stops_at_the_context_end(char_tokenizer):
    model = tiny_hamburger("llama", seed=3)
    model.base.generation_config.eos_token_id = [99]
    prompt = [5] * (model.context_length - 6)
    res = Generation(model, char_tokenizer, [prompt], DecodingConfig(max_new_tokens=50, confidence=0.5)).run()[0]
    assert res.tokens == 6 and res.finish_reason == "length"


def test_unknown_and_missing_models(tmp_path):
    with pytest.raises(HamburgerError, match="unknown model"):
        resolve_base("no-such-model")
    with pytest.raises(HamburgerError, match="does not exist"):
        resolve_base(str(tmp_path / "nope") + "/")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(HamburgerError, match="not a Hugging Face model folder"):
        resolve_base(str(tmp_path))


def test_cli_reports_errors_in_one_line(tmp_path, capsys):
    assert main(["generate", "--model", str(tmp_path), "hello"]) == 1
    err = capsys.readouterr().err
    assert "not a HAMburger checkpoint" in err and "Traceback" not in err
    assert main(["generate", "--model", str(tmp_path), "--confidence", "2", "hello"]) == 1
    assert "confidence must be in (0, 1]" in capsys.readouterr().err
    assert main(["generate", "--model", str(tmp_path), "--top-p", "0", "hello"]) == 1
    assert "top_p" in capsys.readouterr().err
    assert main(["generate", "--model", str(tmp_path), "--max-new-tokens", "-4", "hello"]) == 1
    assert "max_new_tokens" in capsys.readouterr().err
    assert main(["generate", "--model", str(tmp_path), "  \n"]) == 1  # (refused before the model would fail to load)
    assert capsys.readouterr().err.strip() == "hamburger generate: error: the prompt is empty"


def test_help_lists_verbs(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "graft" in out and "generate" in out


def test_a_broken_verb_does_not_break_the_cli(monkeypatch, capsys):
    import sys

    # serve's library cannot be imported (as with a missing optional package): its CLI module, loaded
    # afresh, fails to import, so the verb is listed as unavailable and fails on use only.
    monkeypatch.setitem(sys.modules, "hamburger.serve.app", None)
    monkeypatch.delitem(sys.modules, "hamburger.cli.serve", raising=False)
    assert main(["serve", "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert "the `serve` verb is unavailable" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "graft" in out and "serve" in out


@pytest.mark.parametrize("flags, message", [(["--lookup", "-1"], "--lookup"),
                                            (["--fold", "segments"], "GROUPS:WINDOW")])
def test_serve_refuses_bad_verify_settings_before_loading(flags, message, tmp_path, capsys):
    """A bad --lookup or --fold fails at once with its own message (the missing model is never reached)."""
    assert main(["serve", "--model", str(tmp_path / "missing"), *flags]) == 1
    assert message in capsys.readouterr().err
