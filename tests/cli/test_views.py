"""Terminal and HTML views, and the chat verb, on a tiny checkpoint."""

import io
import itertools
import json

import pytest

from hamburger.cli.main import main
from tests.helpers import save_tiny_checkpoint

TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}assistant: {% endif %}")


def test_generate_shows_groups_and_writes_html(tmp_path, char_tokenizer, capsys):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    page = tmp_path / "view.html"
    assert main(["generate", "--model", str(ckpt), "--raw", "--confidence", "0.5", "--max-new-tokens", "12",
                 "--html", str(page), "abc"]) == 0
    captured = capsys.readouterr()
    assert "|" in captured.out  # group boundaries visible without a terminal
    assert "tau" in captured.err and "KV slots" in captured.err and "tok/s" in captured.err
    text = page.read_text()
    assert text.startswith("<!doctype html>") and 'class="g"' in text and "tau" in text
    assert main(["generate", "--model", str(ckpt), "--raw", "--json", "--max-new-tokens", "5", "--device", "auto",
                 "abc"]) == 0
    streamed_ok = json.loads(capsys.readouterr().out)["tokens"] <= 5
    assert streamed_ok
    assert main(["generate", "--model", str(ckpt), "--raw", "--json", "--max-new-tokens", "5", "--top-logprobs", "2",
                 "abc"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [len(top) for top in result["alternatives"]] == [2] * result["tokens"]
    assert [top[0][0] for top in result["alternatives"]] == result["token_ids"]  # (greedy)
    assert main(["generate", "--model", str(ckpt), "--top-logprobs", "2", "abc"]) == 1
    assert "--top-logprobs shows in the JSON output" in capsys.readouterr().err


@pytest.mark.parametrize("mode", [["--mode", "verify"], ["--mode", "hamburger", "--confidence", "0.5"]])
def test_shown_groups_end_where_the_answer_ends(mode, tmp_path, char_tokenizer, capsys):
    """The groups shown (terminal and HTML) hold the answer's text and nothing past it: a stop string inside a group
    ends the text there, as it ends the answer's text."""
    import html
    import re

    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    run = ["generate", "--model", str(ckpt), "--raw", *mode, "--max-new-tokens", "24"]
    assert main([*run, "--json", "abc"]) == 0
    whole = json.loads(capsys.readouterr().out)
    ends = list(itertools.accumulate(whole["groups"]))
    inside = next(e for e, size in zip(ends, whole["groups"]) if size > 1 and e < len(whole["text"]))
    stop = whole["text"][inside - 2]  # the first character of a group's last two: the group goes on past it
    page = tmp_path / "view.html"
    assert main([*run, "--stop", stop, "--html", str(page), "abc"]) == 0
    shown = capsys.readouterr().out.rstrip("\n").split("|")
    assert main([*run, "--stop", stop, "--json", "abc"]) == 0
    cut = json.loads(capsys.readouterr().out)
    assert cut["text"] == whole["text"][:whole["text"].index(stop)] and cut["finish_reason"] == "stop"
    assert "".join(shown) == cut["text"] and len(shown) == len(cut["groups"])
    boxes = re.findall(r'<span class="g"[^>]*>(.*?)</span>', page.read_text(), re.S)
    assert [html.unescape(b) for b in boxes] == shown
    # kept special tokens show in the group that wrote them (here every token is the id 1, spelled "<s>")
    special = [*run, "--keep-special-tokens", "--allowed-token-id", "1", "--max-new-tokens", "6", "abc"]
    assert main([*special, "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert main([*special, "--html", str(page)]) == 0
    assert capsys.readouterr().out.rstrip("\n").split("|") == ["<s>" * size for size in groups]
    boxes = re.findall(r'<span class="g"[^>]*>(.*?)</span>', page.read_text(), re.S)
    assert [html.unescape(b) for b in boxes] == ["<s>" * size for size in groups]


def test_generate_drafts_from_a_prediction(tmp_path, char_tokenizer, capsys):
    """--prediction (inline, a file, a prompts file's field): the answer is the one without it, its drafts kept save
    forwards and are counted (the summary, --json); a long inline text is text; refused in mode hamburger."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    run = ["generate", "--model", str(ckpt), "--raw", "--mode", "verify", "--max-new-tokens", "16"]

    def answer(*options) -> dict:
        assert main([*run, "--json", *options, "abc"]) == 0
        return json.loads(capsys.readouterr().out)
    plain = answer()
    assert plain["accepted_prediction_tokens"] == plain["rejected_prediction_tokens"] == 0
    saved = tmp_path / "earlier.txt"
    saved.write_text(plain["text"])
    for given in (plain["text"], str(saved)):
        right = answer("--prediction", given)
        assert right["token_ids"] == plain["token_ids"] and right["forwards"] < plain["forwards"] / 2
        assert right["accepted_prediction_tokens"] == right["tokens"] - right["forwards"]
    long = answer("--prediction", "x" * 400)  # no file has such a name: the text itself
    assert long["token_ids"] == plain["token_ids"] and long["accepted_prediction_tokens"] == 0
    assert main([*run, "--prediction", plain["text"], "abc"]) == 0
    kept = right["accepted_prediction_tokens"]
    assert f"({kept} predicted tokens kept, 0 refused)" in capsys.readouterr().err
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("\n".join(json.dumps(r) for r in [{"prompt": "abc", "prediction": plain["text"]},
                                                          {"prompt": "abc"}]) + "\n")
    assert main([*run, "--prompts-file", str(prompts)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["token_ids"] for r in rows] == [plain["token_ids"]] * 2
    assert [r["accepted_prediction_tokens"] for r in rows] == [kept, 0]
    prompts.write_text(json.dumps({"prompt": "abc", "prediction": 7}) + "\n")
    assert main([*run, "--prompts-file", str(prompts)]) == 1
    assert "prompt 1 of" in capsys.readouterr().err
    assert main([*run, "--mode", "hamburger", "--prediction", "abc", "abc"]) == 1
    assert "a prediction drafts in the verify modes only" in capsys.readouterr().err


@pytest.mark.parametrize("mode", [["--mode", "verify"], ["--mode", "hamburger", "--confidence", "0.5"]])
def test_generate_with_penalties_and_bias(mode, tmp_path, char_tokenizer, capsys):
    """--logit-bias ID=-100 keeps those tokens out of the answer, the penalties change it, --json-schema and --grammar
    hold it to a schema or a grammar; bad values are refused."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    run = ["generate", "--model", str(ckpt), "--raw", "--json", "--max-new-tokens", "12", *mode]

    def answer(*options) -> list[int]:
        assert main([*run, *options, "abc"]) == 0
        return json.loads(capsys.readouterr().out)["token_ids"]
    plain = answer()
    banned = answer(*[f"--logit-bias={t}=-100" for t in set(plain)])
    assert banned and not set(banned) & set(plain)
    assert answer("--repetition-penalty", "3", "--frequency-penalty", "2", "--presence-penalty", "2") != plain
    assert answer("--temperature", "1", "--seed", "3", "--min-p", "1") == plain  # (only the most likely token stays)
    ends = ["--logit-bias", "2=8", "--logit-bias", "3=8"]  # (the end ids biased up: the answer ends at once)
    assert len(answer(*ends)) < 6 <= len(answer(*ends, "--min-tokens", "6")) < 12 == len(answer(*ends, "--ignore-eos"))
    varied = answer("--ignore-eos", "--repetition-penalty", "3")
    at = next(i for i, t in enumerate(varied) if i >= 2 and t not in varied[:i])
    assert answer("--ignore-eos", "--repetition-penalty", "3", "--stop-token-id", str(varied[at])) == varied[:at + 1]
    allowed = sorted(set(varied))[:2]
    assert set(answer(*[f"--allowed-token-id={t}" for t in allowed])) <= set(allowed)
    said = char_tokenizer.decode(plain)
    assert said[1] not in char_tokenizer.decode(answer("--bad-word", said[1]))
    for options, text in [((), ""), (("--keep-special-tokens",), char_tokenizer.bos_token * 12)]:  # (<s> only)
        assert main([*run, "--allowed-token-id", str(char_tokenizer.bos_token_id), *options, "abc"]) == 0
        assert json.loads(capsys.readouterr().out)["text"] == text
    word = char_tokenizer.decode(varied[at:at + 2])  # (a stop string: the text ends with it, and the summary says so)
    varied = ["--ignore-eos", "--repetition-penalty", "3", "--stop", word]
    assert main([*run, *varied, "--include-stop-str-in-output", "abc"]) == 0
    kept = json.loads(capsys.readouterr().out)
    assert kept["text"].endswith(word) and (kept["finish_reason"], kept["stop_reason"]) == ("stop", word)
    assert main([a for a in run if a != "--json"] + [*varied, "abc"]) == 0
    assert f"| stop at {word!r}]" in capsys.readouterr().err
    assert main([*run, "--presence-penalty", "3", "abc"]) == 1
    assert "presence_penalty must be a number in [-2, 2]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*run, "--logit-bias", "7", "abc"])
    assert "expected ID=BIAS" in capsys.readouterr().err
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "integer", "minimum": 0, "maximum": 999}')
    assert main([*run, "--json-schema", str(schema), "abc"]) == 0
    assert 0 <= json.loads(json.loads(capsys.readouterr().out)["text"]) <= 999
    with pytest.raises(SystemExit):
        main([*run, "--json-schema", "[1", "abc"])
    assert "not JSON, nor a file holding it" in capsys.readouterr().err
    lark = tmp_path / "answer.lark"
    lark.write_text('start: "yes" | "no"\n')
    for grammar in (str(lark), 'start: "yes" | "no"'):
        assert main([*run, "--grammar", grammar, "abc"]) == 0
        assert json.loads(capsys.readouterr().out)["text"] in ("yes", "no")
    assert main([*run, "--grammar", "start: nowhere", "abc"]) == 1
    assert "unusable grammar" in capsys.readouterr().err


def chat_checkpoint(tmp_path, char_tokenizer):
    """A tiny checkpoint whose tokenizer has a chat template."""
    char_tokenizer.chat_template = TEMPLATE
    try:
        return save_tiny_checkpoint(tmp_path, char_tokenizer)
    finally:
        char_tokenizer.chat_template = None


@pytest.mark.parametrize("mode", [[], ["--mode", "verify_fold", "--fold", "forwards:0"], ["--mode", "hamburger"]])
def test_chat_multi_turn_from_a_pipe(mode, tmp_path, char_tokenizer, capsys, monkeypatch):
    """`hamburger chat` in each decoding mode (as `generate`'s): one streamed answer and summary per turn."""
    ckpt = chat_checkpoint(tmp_path, char_tokenizer)
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\nand again\n/reset\nnew start\n/exit\n"))
    assert main(["chat", "--model", str(ckpt), "--max-new-tokens", "8", "--confidence", "0.5", "--device", "cpu",
                 *mode]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("tau") == 3  # one summary per answered turn
    assert "conversation reset" in captured.err


def test_chat_drops_its_oldest_exchanges_to_fit_the_context(tmp_path, char_tokenizer, capsys, monkeypatch):
    """Three turns (with replies of 100 tokens) outgrow the tiny model's context of 1,024 tokens with room for a
    reply, though the third's prompt alone (about 970 tokens) would fit: it drops the first exchange (the system
    message stays) and is answered; a turn too long even alone is an error, and the chat goes on."""
    ckpt, saved = chat_checkpoint(tmp_path, char_tokenizer), tmp_path / "talk.json"
    turns = ["a" * 300, "b" * 300, "c" * 100, "d" * 1100, "e", f"/save {saved}", "/exit"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(turns) + "\n"))
    assert main(["chat", "--model", str(ckpt), "--max-new-tokens", "100", "--ignore-eos", "--mode", "verify",
                 "--system", "sys", "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    summaries = [i for i, line in enumerate(err.splitlines()) if "tau" in line]
    dropped = [i for i, line in enumerate(err.splitlines()) if "its 2 oldest messages are dropped" in line]
    assert len(summaries) == 4 and summaries[1] < dropped[0] < summaries[2] and len(dropped) == 1  # (at the third)
    assert "the prompt has" in err  # (the turn of 1,100 tokens)
    kept = json.loads(saved.read_text())
    assert [m["role"] for m in kept] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert [kept[i]["content"][0] for i in (0, 1, 3, 5)] == ["s", "b", "c", "e"]


def test_prompts_file_lines_with_conversations(tmp_path, char_tokenizer, capsys):
    """A prompts file's line may hold 'messages' (OpenAI's): read through the chat template as `chat` reads them, with
    --system where the conversation has none; refused with --raw, and where malformed (naming the line)."""
    ckpt = chat_checkpoint(tmp_path, char_tokenizer)
    run = ["generate", "--model", str(ckpt), "--max-new-tokens", "6", "--mode", "verify", "--system", "be brief"]
    assert main([*run, "--json", "hi"]) == 0
    plain = json.loads(capsys.readouterr().out)
    talk = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "hm"}]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(line) + "\n" for line in [
        {"messages": [{"role": "user", "content": "hi"}]}, {"prompt": "hi"}, {"messages": talk},
        {"messages": [{"role": "system", "content": "be brief"}, *talk]}]))
    assert main([*run, "--prompts-file", str(prompts)]) == 0
    first, second, third, fourth = map(json.loads, capsys.readouterr().out.splitlines())
    assert first["token_ids"] == second["token_ids"] == plain["token_ids"]
    assert first["prompt_tokens"] == plain["prompt_tokens"]
    assert third["prompt_tokens"] == fourth["prompt_tokens"] > plain["prompt_tokens"]  # (one system message)
    assert main([*run, "--raw", "--prompts-file", str(prompts)]) == 1
    assert "need the chat template, which --raw leaves out" in capsys.readouterr().err
    prompts.write_text(json.dumps({"prompt": "hi"}) + "\n" + json.dumps({"messages": [{"role": "bot"}]}) + "\n")
    assert main([*run, "--prompts-file", str(prompts)]) == 1
    assert f"{prompts}:2: 'messages': a non-empty list of messages" in capsys.readouterr().err


def test_chat_template_kwargs_reach_the_template(tmp_path, char_tokenizer, capsys, monkeypatch):
    """--chat-template-kwargs sets variables the chat template reads, in generate and chat; refused beside --raw and
    when not a JSON object."""
    char_tokenizer.chat_template = TEMPLATE + "{% if shout %}!!!!{% endif %}"
    try:
        ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    finally:
        char_tokenizer.chat_template = None
    run = ["generate", "--model", str(ckpt), "--json", "--max-new-tokens", "4", "--mode", "verify"]

    def prompt_tokens(*options) -> int:
        assert main([*run, *options, "hi"]) == 0
        return json.loads(capsys.readouterr().out)["prompt_tokens"]
    assert prompt_tokens("--chat-template-kwargs", '{"shout": true}') == prompt_tokens() + 4
    assert prompt_tokens("--chat-template-kwargs", '{"shout": false}') == prompt_tokens()
    assert main([*run, "--raw", "--chat-template-kwargs", '{"shout": true}', "hi"]) == 1
    assert "which --raw leaves out" in capsys.readouterr().err
    assert main([*run, "--chat-template-kwargs", '{"tokenize": false}', "hi"]) == 1
    assert "may not set ['tokenize']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*run, "--chat-template-kwargs", "[1]", "hi"])
    assert "a JSON object" in capsys.readouterr().err
    shout = chat_run(ckpt, monkeypatch, capsys, "hi\n", "--chat-template-kwargs", '{"shout": true}')
    assert shout.out != chat_run(ckpt, monkeypatch, capsys, "hi\n").out  # (the reply reads another prompt)


def chat_run(ckpt, monkeypatch, capsys, lines: str, *options: str, code: int = 0):
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main(["chat", "--model", str(ckpt), "--max-new-tokens", "8", "--mode", "verify",
                 "--repetition-penalty", "5", *options]) == code  # (replies that differ with the conversation)
    return capsys.readouterr()


def test_chat_system_command_sets_the_system_message(tmp_path, char_tokenizer, capsys, monkeypatch):
    """/system TEXT: the next reply reads the new system message in place of --system's (the reply of a chat started
    with that message), and the conversation saved holds it first; /system alone shows it."""
    ckpt, saved = chat_checkpoint(tmp_path, char_tokenizer), tmp_path / "talk.json"
    fresh = chat_run(ckpt, monkeypatch, capsys, "hi\n", "--system", "be kind").out.splitlines()
    got = chat_run(ckpt, monkeypatch, capsys, f"/system\n/system be kind\n/system\nhi\n/save {saved}\n",
                   "--system", "be short")
    assert got.out.splitlines()[-1] == fresh[-1]
    assert "(system message: be short)" in got.err and "(system message: be kind)" in got.err
    assert [m["content"] for m in json.loads(saved.read_text())][:2] == ["be kind", "hi"]
    assert "(no system message)" in chat_run(ckpt, monkeypatch, capsys, "/system\n").err


def test_chat_commands_undo_retry_save_and_load(tmp_path, char_tokenizer, capsys, monkeypatch):
    """/undo takes back an exchange, /retry asks again (greedy: the same reply), /save and /load keep a conversation
    that goes on as the unbroken one does; bad commands and files are one line each, and the chat goes on."""
    ckpt = chat_checkpoint(tmp_path, char_tokenizer)
    saved = tmp_path / "talk.json"
    plain = chat_run(ckpt, monkeypatch, capsys, "hi\nagain\n").out.splitlines()
    got = chat_run(ckpt, monkeypatch, capsys, f"/undo\nhello\n/undo\nhi\n/retry\n/save {saved}\n/reset\n"
                                              f"/load {saved}\nagain\n/help\n/bogus\n/load\n/load {tmp_path}\n")
    assert got.out.splitlines()[1:] == [plain[0], plain[0], plain[1]] and len(set(plain)) == 2
    assert json.loads(saved.read_text()) == [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": plain[0]}]
    for said in ("nothing to take back yet", "took back the last exchange", "saved 2 messages", "conversation reset",
                 "loaded 2 messages", "/retry: the last reply again", "unknown command /bogus", "usage: /load FILE",
                 "cannot read a conversation from"):
        assert said in got.err, said
    resumed = chat_run(ckpt, monkeypatch, capsys, "again\n", "--load", str(saved))  # (as /load does)
    assert resumed.out.splitlines() == [plain[1]]
    saved.write_text('[{"role": "robot", "content": "x"}]')
    assert "is not a conversation" in chat_run(ckpt, monkeypatch, capsys, f"/load {saved}\n").err
    assert "is not a conversation" in chat_run(ckpt, monkeypatch, capsys, "", "--load", str(saved), code=1).err


def test_ctrl_c_stops_a_reply_and_the_chat_goes_on(tmp_path, char_tokenizer, capsys, monkeypatch):
    """Ctrl-C while a reply streams stops it there: what was shown is the reply the conversation keeps, and the next
    turn is answered."""
    import hamburger.cli.render as render

    ckpt = chat_checkpoint(tmp_path, char_tokenizer)
    saved, shown = tmp_path / "talk.json", render.stream_text
    calls = []

    def interrupted(event, color):
        calls.append(event.text)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return shown(event, color)
    monkeypatch.setattr(render, "stream_text", interrupted)
    got = chat_run(ckpt, monkeypatch, capsys, f"hi\nagain\n/save {saved}\n")
    assert "(stopped)" in got.err and got.err.count("tau") == 1  # (the second reply's summary)
    kept = json.loads(saved.read_text())
    assert [m["role"] for m in kept] == ["user", "assistant", "user", "assistant"]
    assert kept[1]["content"] == calls[0] and len(calls) > 2  # (the second group was never shown)


def test_chat_reads_only_each_new_turn(tmp_path, char_tokenizer, capsys, monkeypatch):
    """`hamburger chat` keeps the conversation's cache (`--prompt-cache`): each turn after the first reads only its new
    messages, and the answers are those of a chat that reads everything every turn."""
    ckpt = chat_checkpoint(tmp_path, char_tokenizer)
    outputs = {}
    for cache in ("256", "0"):
        monkeypatch.setattr("sys.stdin", io.StringIO("hello there\nand again\nonce more\n"))
        assert main(["chat", "--model", str(ckpt), "--max-new-tokens", "8", "--confidence", "0.5", "--device", "cpu",
                     "--mode", "hamburger", "--prompt-cache", cache]) == 0
        outputs[cache] = capsys.readouterr()
    summaries = [line for line in outputs["256"].err.splitlines() if "tau" in line]
    assert len(summaries) == 3 and "cached" not in summaries[0]
    assert all("prompt tokens cached" in line for line in summaries[1:])
    assert "cached" not in outputs["0"].err and outputs["256"].out == outputs["0"].out
    assert main(["chat", "--model", str(ckpt), "--prompt-cache", "-1"]) != 0
    assert "--prompt-cache must be >= 0" in capsys.readouterr().err
