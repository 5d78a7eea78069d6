"""Integration tests on the real bundled SmolLM2-135M-Instruct (converted once into the cache)."""

import json
import subprocess
import sys

import pytest
import torch

from hamburger.core.base import load_base
from hamburger.core.config import HamburgerConfig
from hamburger.engine.generate import generate
from hamburger.engine.prompt import encode_prompt
from hamburger.core.model import HamburgerModel
from hamburger.engine.sampling import DecodingConfig

PROMPTS = ["What is 2+2?", "Name three colours.", "Write one sentence about the sea."]


@pytest.fixture(scope="module")
def bundled():
    base, tokenizer, info = load_base(None)
    return HamburgerModel(base, HamburgerConfig()).eval(), tokenizer, info


def test_confidence_one_reproduces_base_greedy(bundled):
    model, tokenizer, _ = bundled
    for prompt in PROMPTS:
        ids = encode_prompt(tokenizer, prompt)
        res = generate(model, tokenizer, ids, DecodingConfig(max_new_tokens=24, confidence=1.0))
        ref = model.base.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                  max_new_tokens=24, do_sample=False)
        assert res.token_ids == ref[0, len(ids):].tolist()


def test_bundled_base_loads_with_its_facts(bundled):
    model, tokenizer, info = bundled
    assert info.spec == "smollm2-135m-instruct" and len(info.fingerprint) == 16
    assert model.config.tap_layers == [7, 14, 21] and model.config.hidden_size == 576
    from hamburger.engine.prompt import eos_ids

    assert tokenizer.eos_token_id in eos_ids(model, tokenizer)


def test_cli_graft_then_generate_json(tmp_path):
    ckpt = tmp_path / "ckpt"
    run = subprocess.run([sys.executable, "-m", "hamburger.cli", "graft", "--out", str(ckpt)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    run = subprocess.run([sys.executable, "-m", "hamburger.cli", "generate", "--model", str(ckpt), "--json",
                          "--mode", "hamburger", "--confidence", "1.0", "--max-new-tokens", "16", "What is 2+2?"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert "4" in out["text"] and out["tau"] == 1.0 and out["groups"] == [1] * out["tokens"]
    for key in ("token_ids", "forwards", "kv_slots", "kv_bytes", "kv_bytes_ordinary", "decode_tok_s", "prefill_s"):
        assert key in out


def test_batch_equals_single_runs_on_the_real_model(bundled):
    from hamburger.engine.generate import Generation

    model, tokenizer, _ = bundled
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # an untrained graft with a stop head that keeps groups going now and then
        for p in model.stop_head.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    ids = [encode_prompt(tokenizer, p) for p in PROMPTS]
    cfg = DecodingConfig(max_new_tokens=20, confidence=0.5)
    batch = Generation(model, tokenizer, ids, cfg).run()
    assert any(max(r.groups) > 1 for r in batch)
    for prompt_ids, res in zip(ids, batch):
        single = generate(model, tokenizer, prompt_ids, cfg)
        assert (res.token_ids, res.groups) == (single.token_ids, single.groups)
