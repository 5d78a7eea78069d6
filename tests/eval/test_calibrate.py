"""Calibration by rule: the lowest knob inside every band, on dev prompts only."""

import json

import pytest

from hamburger.eval.calibrate import calibrate_from, check_dev, choose_knob, write_default_knob
from hamburger.cli.main import main
from hamburger.errors import HamburgerError
from hamburger.eval.paired import Band


def synthetic(nll_by_knob: dict[float, float], n: int = 30) -> list[dict]:
    """Base greedy NLL 0.5, base sampled 1.0; each knob's answers a fixed NLL; per-prompt noise of its own."""
    rows = []
    for i in range(n):
        noise, own = 0.05 * ((i % 3) - 1), 0.05 * ((i % 5) - 2)
        rows.append({"task": "chat", "method": "base", "id": f"p{i}", "confidence": 1.0, "nll_per_token": 0.5})
        rows.append({"task": "chat", "method": "base-sampled", "id": f"p{i}", "confidence": 1.0,
                     "nll_per_token": 1.0 + noise})
        for knob, nll in nll_by_knob.items():
            rows.append({"task": "chat", "method": f"hamburger@{knob:g}", "id": f"p{i}", "confidence": knob,
                         "nll_per_token": nll + own})
    return rows


BANDS = (Band("nll_per_token", "base-sampled", False, 0.0),)


def test_picks_lowest_knob_inside_the_band():
    records = synthetic({0.5: 1.9, 0.7: 1.02, 0.8: 0.98, 0.9: 0.6, 1.0: 0.5})
    knob, record = calibrate_from(records, {}, [0.5, 0.7, 0.8, 0.9, 1.0], BANDS, "point")
    assert knob == 0.8 and record["knobs"] == {"0.5": False, "0.7": False, "0.8": True, "0.9": True, "1": True}
    # the whole-interval rule is stricter: 0.98 vs 1.0 is not shown to be inside with this noise
    assert calibrate_from(records, {}, [0.5, 0.7, 0.8, 0.9, 1.0], BANDS, "ci")[0] == 0.9


def test_no_knob_inside_is_an_error():
    with pytest.raises(HamburgerError, match="no knob"):
        calibrate_from(synthetic({0.5: 2.0, 0.9: 1.5}), {}, [0.5, 0.9], BANDS, "point")
    with pytest.raises(HamburgerError, match="nothing to judge"):
        choose_knob([], [0.9])


def test_refuses_test_sets_and_custom_files():
    for tasks in (["ifeval"], ["chat", "humaneval"]):
        with pytest.raises(HamburgerError, match="test set"):
            check_dev(tasks)
    with pytest.raises(HamburgerError, match="custom prompt file"):
        check_dev(["gsm8k"], {"gsm8k_file": "test.jsonl"})
    records = [dict(r, task="ifeval") for r in synthetic({0.9: 0.6})]
    with pytest.raises(HamburgerError, match="test set"):
        calibrate_from(records, {}, [0.9], BANDS, "point")
    assert main(["calibrate", "--model", "x", "--tasks", "ifeval"]) == 1


def fake_checkpoint(tmp_path, knob: float):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "hamburger_config.json").write_text(json.dumps({"format": "hamburger-checkpoint/1",
                                                             "base": {"spec": "b", "fingerprint": "f"},
                                                             "config": {"default_confidence": knob}}))
    return ckpt


def test_writes_the_knob_into_the_checkpoint(tmp_path):
    ckpt = fake_checkpoint(tmp_path, 0.9)
    write_default_knob(ckpt, 0.8, {"rule": "point"})
    meta = json.loads((ckpt / "hamburger_config.json").read_text())
    assert meta["config"]["default_confidence"] == 0.8 and meta["calibration"] == {"rule": "point"}


def test_calibrate_cli_from_eval_results(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    records = synthetic({0.7: 1.3, 0.9: 0.7})
    (run / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "summary.json").write_text(json.dumps({"meta": {"max_new_tokens": 16}}))
    ckpt = fake_checkpoint(tmp_path, 0.5)
    assert main(["calibrate", "--model", str(ckpt), "--tasks", "chat", "--results", str(run),
                 "--bands", "nll_per_token:base-sampled:lower:0"]) == 0
    assert json.loads((ckpt / "hamburger_config.json").read_text())["config"]["default_confidence"] == 0.9
    assert "chosen default knob 0.9" in capsys.readouterr().out


def test_calibrate_end_to_end_on_a_tiny_model(tmp_path, char_tokenizer):
    from tests.helpers import save_tiny_checkpoint

    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    assert main(["calibrate", "--model", str(ckpt), "--tasks", "chat", "--limit", "1", "--max-new-tokens", "4",
                 "--device", "cpu", "--confidence", "0.5,1.0", "--out", str(tmp_path / "sweep")]) == 0
    meta = json.loads((ckpt / "hamburger_config.json").read_text())
    record = meta["calibration"]
    assert meta["config"]["default_confidence"] == record["knob"] and record["knobs"]["1"] is True
    assert record["tasks"] == ["chat"] and record["examples"] == {"chat": 1}
    assert (tmp_path / "sweep" / "summary.md").is_file()
    sweep = json.loads((tmp_path / "sweep" / "summary.json").read_text())["meta"]
    assert sweep["fingerprint"] == meta["base"]["fingerprint"] and sweep["machine"]["dtype"] == "float32"
    # a later eval takes the sweep's base answers as they are instead of decoding them again
    assert main(["eval", "--model", str(ckpt), "--tasks", "chat", "--limit", "1", "--max-new-tokens", "4",
                 "--confidence", "", "--verify", "--reuse-base", str(tmp_path / "sweep"),
                 "--out", str(tmp_path / "more")]) == 0
    more = [json.loads(line) for line in (tmp_path / "more" / "examples.jsonl").read_text().splitlines()]
    first = [json.loads(line) for line in (tmp_path / "sweep" / "examples.jsonl").read_text().splitlines()]
    assert [r for r in more if r["method"] in ("base", "base-sampled")] == \
        [r for r in first if r["method"] in ("base", "base-sampled")]


def test_a_killed_calibration_goes_on_where_it_stopped(tmp_path, char_tokenizer, capsys, monkeypatch):
    """The sweep keeps each batch's answers in its folder, as `eval` does: run again, it decodes only the rest."""
    import hamburger.eval.run as run_module
    from tests.helpers import counted_generation, save_tiny_checkpoint

    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    run = ["calibrate", "--model", str(ckpt), "--tasks", "chat", "--limit", "2", "--max-new-tokens", "4",
           "--batch-size", "1", "--device", "cpu", "--confidence", "0.5,1.0", "--dry-run", "--out", str(tmp_path)]
    calls = []
    monkeypatch.setattr(run_module, "Generation", counted_generation(calls, stop_after=2))
    assert main(run) == 130
    calls.clear()
    monkeypatch.setattr(run_module, "Generation", counted_generation(calls))
    assert main(run) == 0
    assert len(calls) == 8 - 2 and "resuming: 2 answers" in capsys.readouterr().err  # (4 methods, 2 prompts each)
    assert not (tmp_path / run_module.PROGRESS).exists()

