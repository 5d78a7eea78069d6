"""Batched generation: each row keeps its own group lengths, slots and positions."""

import json

import pytest
import torch

from hamburger.cli.main import main
from hamburger.engine.generate import Generation, generate
from hamburger.engine.sampling import DecodingConfig
from tests.helpers import save_tiny_checkpoint, tiny_hamburger

PROMPTS = [[1, 40, 41, 42, 43], [1, 50, 60, 70, 80, 90, 22, 23, 24], [1, 77], [1, 5, 6, 7, 8, 9, 10]]


@pytest.fixture
def model():
    m = tiny_hamburger("llama", seed=5)
    with torch.no_grad():
        m.stop_head.net[2].bias.fill_(-2.0)
    return m


def test_rows_finishing_early_do_not_change_the_others(model, char_tokenizer):
    singles = [generate(model, char_tokenizer, p, DecodingConfig(max_new_tokens=16, confidence=0.5))
               for p in PROMPTS]
    # Row 0 ends after its first group: give it the first token it emits as an extra EOS via max_new_tokens=1.
    configs = [DecodingConfig(max_new_tokens=1, confidence=0.5)] + \
              [DecodingConfig(max_new_tokens=16, confidence=0.5)] * 3
    batch = Generation(model, char_tokenizer, PROMPTS, configs).run()
    assert batch[0].tokens == 1 and batch[0].forwards == 1
    for single, res in zip(singles[1:], batch[1:]):
        assert (res.token_ids, res.groups) == (single.token_ids, single.groups)


def test_row_with_eos_in_first_group(model, char_tokenizer):
    first = generate(model, char_tokenizer, PROMPTS[2], DecodingConfig(max_new_tokens=16, confidence=0.5))
    model.base.generation_config.eos_token_id = [2, 3, first.token_ids[0]]
    try:
        batch = Generation(model, char_tokenizer, PROMPTS, DecodingConfig(max_new_tokens=16, confidence=0.5)).run()
        singles = [generate(model, char_tokenizer, p, DecodingConfig(max_new_tokens=16, confidence=0.5))
                   for p in PROMPTS]
    finally:
        model.base.generation_config.eos_token_id = [2, 3]
    assert batch[2].token_ids == first.token_ids[:1] and batch[2].finish_reason == "eos"
    for single, res in zip(singles, batch):
        assert (res.token_ids, res.groups) == (single.token_ids, single.groups)


def test_per_row_seeds_do_not_depend_on_batch_composition(model, char_tokenizer):
    cfgs = [DecodingConfig(max_new_tokens=14, confidence=0.6, temperature=0.9, seed=s) for s in (11, 12, 13, 14)]
    together = Generation(model, char_tokenizer, PROMPTS, cfgs).run()
    for prompt, cfg, res in zip(PROMPTS, cfgs, together):
        alone = generate(model, char_tokenizer, prompt, cfg)
        assert (alone.token_ids, alone.groups) == (res.token_ids, res.groups)
    reordered = Generation(model, char_tokenizer, PROMPTS[::-1], cfgs[::-1]).run()[::-1]
    assert [r.token_ids for r in reordered] == [r.token_ids for r in together]


def test_batch_kv_memory_is_per_row(model, char_tokenizer):
    run = Generation(model, char_tokenizer, PROMPTS, DecodingConfig(max_new_tokens=12, confidence=0.5))
    results = run.run()
    for prompt, res in zip(PROMPTS, results):
        assert res.kv_slots == len(prompt) + len(res.groups) - 1
    assert run.peak_kv_bytes >= max(r.kv_bytes for r in results)


def test_cli_prompts_file_in_input_order(tmp_path, capsys, char_tokenizer, model):
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer, model)
    texts = ["abc", "hello\nworld", "xyz xyz", "q"]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts))
    assert main(["generate", "--model", str(ckpt), "--prompts-file", str(prompts), "--batch-size", "3", "--raw",
                 "--max-new-tokens", "10", "--confidence", "0.5", "--mode", "hamburger"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4
    for text, line in zip(texts, lines):
        ids = char_tokenizer(text)["input_ids"]
        single = generate(model, char_tokenizer, ids, DecodingConfig(max_new_tokens=10, confidence=0.5))
        assert line["token_ids"] == single.token_ids and line["groups"] == single.groups
    prompts.write_text('{"text": "no prompt field"}\n')
    assert main(["generate", "--model", str(ckpt), "--prompts-file", str(prompts)]) == 1
    assert "prompt" in capsys.readouterr().err


def test_cli_prompts_file_lines_with_their_own_settings(tmp_path, capsys, char_tokenizer, model):
    """A line's settings (the options' names) are its prompt's, the options the rest; each answer carries its line's
    id; a bad value names its line."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer, model)
    base = dict(max_new_tokens=10, confidence=0.5)
    lines = [({"id": "a", "prompt": "abc", "temperature": 1.0, "seed": 3, "top_k": 5}, dict(temperature=1.0, seed=3,
                                                                                           top_k=5)),
             ({"prompt": "hello", "max_new_tokens": 4, "repetition_penalty": 2.0}, dict(max_new_tokens=4,
                                                                                         repetition_penalty=2.0)),
             ({"id": 7, "prompt": "xyz xyz", "confidence": 1.0}, dict(confidence=1.0))]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(line) + "\n" for line, _ in lines))
    run = ["generate", "--model", str(ckpt), "--prompts-file", str(prompts), "--raw", "--max-new-tokens", "10",
           "--confidence", "0.5", "--mode", "hamburger"]
    assert main(run) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    for (line, own), got in zip(lines, out):
        single = generate(model, char_tokenizer, char_tokenizer(line["prompt"])["input_ids"],
                          DecodingConfig(**{**base, **own}))
        assert got["token_ids"] == single.token_ids and got.get("id") == line.get("id")
    text = out[0]["text"]
    prompts.write_text(json.dumps({"prompt": "abc", "temperature": 1.0, "seed": 3, "top_k": 5, "stop": text[1:3]})
                       + "\n")
    assert main(run) == 0
    stopped = json.loads(capsys.readouterr().out)
    assert stopped["text"] == text[:text.index(text[1:3])] and stopped["finish_reason"] == "stop"
    for bad, says in [({"temperature": -1}, "temperature must be >= 0"), ({"temperature": "hot"}, "prompt 2 of"),
                      ({"stop": [3]}, "'stop' must be a string or a list of strings")]:
        prompts.write_text(json.dumps({"prompt": "abc"}) + "\n" + json.dumps({"prompt": "abc", **bad}) + "\n")
        assert main(run) == 1
        assert f"prompt 2 of {prompts}: " in (err := capsys.readouterr().err) and says in err, err


def test_cli_prompts_file_to_a_file_goes_on_where_it_was_killed(tmp_path, capsys, char_tokenizer, model):
    """--out: the answers go to the file (stdout stays empty); killed after one answer and half a line, a rerun
    answers only the rest, as the whole run did; other settings, or a file of other prompts, are refused."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer, model)
    prompts, out = tmp_path / "prompts.jsonl", tmp_path / "answers.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": t}) + "\n"
                               for i, t in enumerate(["abc", "hello", "xyz xyz", "q"])))
    run = ["generate", "--model", str(ckpt), "--prompts-file", str(prompts), "--batch-size", "3", "--raw",
           "--max-new-tokens", "10", "--confidence", "0.5", "--mode", "hamburger", "--out", str(out)]
    def answers() -> list[tuple]:  # (what was written; not its timings)
        return [(a["id"], a["token_ids"], a["groups"]) for a in map(json.loads, out.read_text().splitlines())]
    assert main(run) == 0
    whole, lines = answers(), out.read_text().splitlines(keepends=True)
    assert capsys.readouterr().out == "" and [a[0] for a in whole] == ["p0", "p1", "p2", "p3"]
    out.write_text(lines[0] + lines[1][:25])
    assert main(run) == 0
    assert answers() == whole and "4 answers (3 new)" in capsys.readouterr().err
    assert out.read_text().startswith(lines[0])
    assert main(run) == 0 and answers() == whole
    assert "all 4 answers are there already" in capsys.readouterr().err
    out.write_text(lines[0])
    assert main([*run[:-2], "--temperature", "0.5", "--out", str(out)]) == 1
    assert "made with other settings" in capsys.readouterr().err
    out.write_text(lines[1])
    assert main(run) == 1
    assert "holds answers to other prompts" in capsys.readouterr().err
    assert main(["generate", "--model", str(ckpt), "--out", str(out), "abc"]) == 1
    assert "--out writes the answers of a --prompts-file" in capsys.readouterr().err


def test_cli_prompts_file_answers_each_line_n_times(tmp_path, capsys, char_tokenizer, model):
    """A line's 'n' (or --n) answers, each with its index, seeded ones with successive seeds, as single runs give them;
    a killed run goes on among a line's answers; another --n is other settings; a bad 'n' names its line. One prompt's
    --n answers come the same way."""
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer, model)
    prompts, out = tmp_path / "prompts.jsonl", tmp_path / "answers.jsonl"
    lines = [{"id": "a", "prompt": "abc", "n": 3, "temperature": 1.0, "seed": 5}, {"id": "b", "prompt": "hello"},
             {"id": "c", "prompt": "xyz", "n": 1, "temperature": 1.0, "seed": 9}]
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = ["generate", "--model", str(ckpt), "--prompts-file", str(prompts), "--raw", "--max-new-tokens", "10",
           "--confidence", "0.5", "--mode", "hamburger", "--n", "2", "--batch-size", "3"]
    assert main(run) == 0
    got = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(a["id"], a.get("index")) for a in got] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("c", None)]
    base = dict(max_new_tokens=10, confidence=0.5)
    expected = [dict(temperature=1.0, seed=s) for s in (5, 6, 7)] + [{}, {}, dict(temperature=1.0, seed=9)]
    prompt_of = {line["id"]: line["prompt"] for line in lines}
    for answer, own in zip(got, expected):
        single = generate(model, char_tokenizer, char_tokenizer(prompt_of[answer["id"]])["input_ids"],
                          DecodingConfig(**base, **own))
        assert answer["token_ids"] == single.token_ids
    assert len({tuple(a["token_ids"]) for a in got[:3]}) > 1
    assert main([*run, "--out", str(out)]) == 0
    written = out.read_text().splitlines(keepends=True)
    out.write_text("".join(written[:2]) + written[2][:20])  # killed inside the first line's answers
    assert main([*run, "--out", str(out)]) == 0
    assert [json.loads(x)["token_ids"] for x in out.read_text().splitlines()] == [a["token_ids"] for a in got]
    assert "6 answers (4 new)" in capsys.readouterr().err
    out.write_text(written[0])
    assert main([*run[:-4], "--n", "3", "--out", str(out)]) == 1
    assert "made with other settings" in capsys.readouterr().err
    # a's answer 0 (index 0) is not the answer of a line with one
    prompts.write_text("".join(json.dumps({**line, "n": 1}) + "\n" for line in lines))
    assert main([*run, "--out", str(out)]) == 1
    assert "holds answers to other prompts" in capsys.readouterr().err
    for bad in (0, "2", True):
        prompts.write_text(json.dumps({"prompt": "abc"}) + "\n" + json.dumps({"prompt": "abc", "n": bad}) + "\n")
        assert main(run) == 1
        assert f"prompt 2 of {prompts}: 'n' must be a positive integer" in capsys.readouterr().err

    # one prompt: its answers together, each shown with its summary, or one JSON object each with its index
    one = ["generate", "--model", str(ckpt), "--raw", "--max-new-tokens", "10", "--confidence", "0.5", "--mode",
           "hamburger", "--temperature", "1.0", "--seed", "5", "--n", "3", "abc"]
    assert main([*one, "--json"]) == 0
    got = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [a["index"] for a in got] == [0, 1, 2]
    for answer, seed in zip(got, (5, 6, 7)):
        single = generate(model, char_tokenizer, char_tokenizer("abc")["input_ids"],
                          DecodingConfig(**base, temperature=1.0, seed=seed))
        assert answer["token_ids"] == single.token_ids
    assert main([*one, "--no-color"]) == 0
    shown = capsys.readouterr()
    assert [x for x in shown.out.splitlines() if x.startswith("[answer")] == [f"[answer {i} of 3]" for i in (1, 2, 3)]
    assert shown.err.count("tokens |") == 3
    refused = [(["--stream"], "--stream shows one answer"), (["--html", str(tmp_path / "x.html")],
                                                              "--html shows one answer"), (["--n", "0"], "--n must be")]
    for extra, says in refused:
        assert main([*one, *extra]) == 1
        assert says in capsys.readouterr().err


def test_rows_added_mid_flight_match_single_runs(model, char_tokenizer):
    """Continuous batching: requests join a running batch and still get their batch-1 output."""
    cfg = DecodingConfig(max_new_tokens=14, confidence=0.5)
    run = Generation(model, char_tokenizer, PROMPTS[:2], cfg)
    added = False
    events = 0
    for event in run:
        events += 1
        if events == 3 and not added:  # after the first macro step of the initial rows
            assert run.add(PROMPTS[2], cfg) == 2 and run.add(PROMPTS[3], cfg) == 3
            added = True
    assert added and len(run.results) == 4
    for prompt, res in zip(PROMPTS, run.results):
        single = generate(model, char_tokenizer, prompt, cfg)
        assert (res.token_ids, res.groups, res.kv_slots) == (single.token_ids, single.groups, single.kv_slots)


def test_row_added_after_all_others_finished(model, char_tokenizer):
    cfg = DecodingConfig(max_new_tokens=3, confidence=1.0)
    run = Generation(model, char_tokenizer, [PROMPTS[0]], cfg)
    for event in run:
        if event.finish_reason and event.row == 0:
            run.add(PROMPTS[1], cfg)
    assert len(run.results) == 2
    assert run.results[1].token_ids == generate(model, char_tokenizer, PROMPTS[1], cfg).token_ids
