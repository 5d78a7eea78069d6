"""The command line's shape: one verb table, shared options, --device on every verb that runs a model, and a
library that neither imports argparse nor the CLI."""

import ast
import subprocess
import sys

import pytest
import torch

from hamburger.cli.main import VERBS, build_parser, main
from tests.helpers import ROOT

PACKAGE = ROOT / "hamburger"
MODEL_VERBS = ("generate", "chat", "serve", "eval", "calibrate", "bench", "distill", "segment", "train", "heads")
ANSWER_VERBS = ("generate", "chat", "distill", "eval", "calibrate")


def subparser(verb: str):
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "verb").choices[verb]


def option(verb: str, dest: str):
    return next(a for a in subparser(verb)._actions if a.dest == dest)


def test_public_api_is_importable_from_the_package():
    from hamburger import (DecodingConfig, Folding, PromptCache, VerifyGeneration, encode_prompt, generate,
                           load_model, verify_generate)

    assert callable(load_model) and callable(generate) and callable(verify_generate) and callable(encode_prompt)
    assert PromptCache(1 << 20).stats()["max_bytes"] == 1 << 20
    assert DecodingConfig(max_new_tokens=3).validate().max_new_tokens == 3 and VerifyGeneration
    assert Folding(window=4).validate(max_steps=4).window == 4
    light = subprocess.run([sys.executable, "-c", "import hamburger, sys; print('torch' in sys.modules)"],
                           capture_output=True, text=True, cwd=PACKAGE.parent, timeout=60)
    assert light.stdout.strip() == "False", light.stderr  # `import hamburger` alone does not load torch


def test_the_verb_table_is_what_the_parser_and_the_docstring_show():
    import importlib

    cli_main = importlib.import_module("hamburger.cli.main")  # (the package's attribute `main` is the function)
    assert list(next(a for a in build_parser()._actions if a.dest == "verb").choices) == list(VERBS)
    assert set(VERBS) == {"graft", "export", "generate", "chat", "prompts", "distill", "segment", "train", "bench",
                          "eval", "calibrate", "heads", "serve"}
    for verb in VERBS:
        assert f"hamburger {verb} " in cli_main.__doc__, verb
        assert (PACKAGE / "cli" / f"{VERBS[verb]}.py").is_file()


def test_no_library_module_imports_argparse_or_the_cli():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                if rel.startswith("hamburger/cli/"):
                    continue
                if name == "argparse" or name == "hamburger.cli" or name.startswith("hamburger.cli."):
                    offenders.append(f"{rel}: imports {name}")
            if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                    and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"):
                offenders.append(f"{rel}: has an `if __name__ == ...` block")  # one entry path: hamburger VERB
    assert offenders == []


def test_cli_modules_stay_small():
    for path in (PACKAGE / "cli").glob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, path.name


def test_shared_options_agree_across_verbs():
    for verb in ANSWER_VERBS:
        assert option(verb, "max_new_tokens").default == 256, verb
    for verb in MODEL_VERBS:
        device = option(verb, "device")
        assert tuple(device.choices) == ("cpu", "cuda", "auto"), verb
        assert device.default == (None if verb == "train" else "cpu"), verb  # train: the config's `device`
        dtypes = tuple(option(verb, "dtype").choices)
        assert dtypes == (("float32", "bfloat16", "float16") if verb == "distill" else ("float32", "bfloat16")), verb
        assert option(verb, "threads").default is None, verb


def test_train_maps_the_runtime_options_onto_its_config():
    from hamburger.cli.train import train_config

    parse = build_parser().parse_args
    cfg = train_config(parse(["train", "--data", "d.jsonl", "--out", "r", "--device", "cpu", "--dtype", "bfloat16",
                              "--threads", "2"]))
    assert (cfg.device, cfg.dtype, cfg.threads) == ("cpu", "bf16", 2)
    cfg = train_config(parse(["train", "--data", "d.jsonl", "--out", "r", "--set", "device=cpu"]))
    assert (cfg.device, cfg.dtype, cfg.threads) == ("cpu", "fp32", 0)  # the config's values when not given


@pytest.mark.parametrize("verb", MODEL_VERBS)
def test_device_cuda_without_a_gpu_is_one_line_before_any_model_loads(verb, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    folder, missing = str(tmp_path), str(tmp_path / "missing")  # neither a checkpoint nor a model: loading would fail
    argv = {"generate": ["--model", folder, "hello"], "chat": ["--model", folder], "serve": ["--model", folder],
            "eval": ["--model", folder, "--tasks", "chat"], "calibrate": ["--model", folder, "--dry-run"],
            "bench": ["--model", folder, "--out", str(tmp_path / "b")],
            "distill": ["--base", missing, "--prompts", missing, "--out", str(tmp_path / "o.jsonl")],
            "segment": ["--base", missing, "--data", missing, "--out", str(tmp_path / "o.jsonl")],
            "train": ["--model", missing, "--data", missing, "--out", str(tmp_path / "run")],
            "heads": ["--model", folder, "--answers", missing]}[verb]
    assert main([verb, *argv, "--device", "cuda"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"hamburger {verb}: error:") and "no CUDA device" in err and "\n" not in err, err


def test_load_model_puts_the_model_on_the_device(tmp_path, char_tokenizer, monkeypatch):
    from hamburger import load_model
    from tests.helpers import save_tiny_checkpoint

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ckpt = save_tiny_checkpoint(tmp_path, char_tokenizer)
    model, _, _, reference = load_model(str(ckpt), device="auto", reference=True)  # auto: cpu without a GPU
    assert model.device.type == "cpu" and reference.device.type == "cpu"
