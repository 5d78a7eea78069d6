"""The shipped default model (hamburger/default_model/): it loads offline on the bundled base and generates."""

import json
import subprocess
import sys

import pytest
import torch

from hamburger.core.checkpoint import read_meta
from hamburger.core.loading import DEFAULT_MODEL_DIR, load_model
from hamburger.engine.generate import Generation
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig

PROMPTS = ["What is 2+2?", "Name three colours.", "Write one sentence about the sea.",
           "List the days of the week."]


@pytest.fixture(scope="module")
def default():
    return load_model(None, "float32", reference=True)


def test_shipped_files_are_small_safetensors():
    meta = read_meta(DEFAULT_MODEL_DIR)
    assert meta["base"]["spec"] == "smollm2-135m-instruct" and not meta.get("base_weights")
    files = {p.name: p.stat().st_size for p in DEFAULT_MODEL_DIR.iterdir() if p.is_file()}
    weights = [name for name in files if name.endswith(".safetensors")]
    assert weights and sum(files[n] for n in weights) < 60 * 2**20
    assert not [name for name in files if name.endswith((".pt", ".bin", ".pkl"))]
    assert (DEFAULT_MODEL_DIR / "MODEL_CARD.md").is_file()


def test_default_model_merges_groups_and_keeps_one_slot_per_group(default):
    model, tokenizer, _, _ = default
    ids = [encode_prompt(tokenizer, p) for p in PROMPTS]
    results = Generation(model, tokenizer, ids, DecodingConfig(max_new_tokens=48, confidence=0.5)).run()
    tokens, forwards = sum(r.tokens for r in results), sum(r.forwards for r in results)
    assert tokens / forwards > 1.2, "a trained model at a low knob merges tokens"
    for prompt_ids, r in zip(ids, results):
        assert r.kv_slots == len(prompt_ids) + len(r.groups) - 1
        assert r.text.strip()


def test_default_model_sits_on_the_unchanged_bundled_base(default):
    """At confidence 1.0 the shipped model is the unchanged base's greedy decoding (adapters, if it has any, act
    at merged slots only, and nothing merges)."""
    model, tokenizer, _, reference = default
    ids = encode_prompt(tokenizer, "What is 2+2?")
    ours = Generation(model, tokenizer, [ids], DecodingConfig(max_new_tokens=12, confidence=1.0)).run()[0]
    ref = reference.base.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                  max_new_tokens=12, do_sample=False)[0, len(ids):].tolist()
    assert ours.token_ids == ref


def test_default_model_decodes_on_the_lean_pass(default):
    """The shipped base passes the lean pass's build-time check (at positions far apart since session 70), so its
    decodes keep that pass's speed."""
    assert default[0]._lean_stack() is not None


def test_cli_generate_uses_the_default_model():
    """The README's first command: the default model in the default mode (verify_fold) answers right, drafting;
    with --mode hamburger it decodes at the checkpoint's default knob."""
    from hamburger.engine.verify import VERIFY_CONFIDENCE

    for mode, confidence in (([], VERIFY_CONFIDENCE),
                             (["--mode", "hamburger"], read_meta(DEFAULT_MODEL_DIR)["config"]["default_confidence"])):
        run = subprocess.run([sys.executable, "-m", "hamburger.cli", "generate", "--json", "--max-new-tokens", "24",
                              *mode, "What is 2+2?"], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout)
        assert "4" in out["text"] and out["tokens"] <= 24 and out["confidence"] == confidence
        assert out["kv_slots"] <= out["kv_slots_ordinary"] and ("folded" in out) == (not mode)


def test_a_json_schema_holds_the_real_models_answers(default):
    """The real tokenizer's masks (llguidance reads its byte-level BPE): merged groups and lossless verify mode alike
    answer with JSON the schema accepts, and end there."""
    from hamburger.engine.verify import VerifyGeneration, on_base

    model, tokenizer, _, reference = default
    schema = {"type": "object", "additionalProperties": False, "required": ["name", "age"],
              "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer", "minimum": 0,
                                                                                  "maximum": 150}}}
    ids = [encode_prompt(tokenizer, "Describe a person as JSON with their name and age.")]
    cfg = DecodingConfig(max_new_tokens=48, confidence=0.5, json_schema=schema)
    for run in (Generation(model, tokenizer, ids, cfg), VerifyGeneration(on_base(model, reference), tokenizer, ids,
                                                                         DecodingConfig(max_new_tokens=48,
                                                                                        json_schema=schema))):
        result = run.run()[0]
        value = json.loads(result.text)
        assert result.finish_reason == "eos" and set(value) == {"name", "age"}, result.text
        assert isinstance(value["name"], str) and 0 <= value["age"] <= 150
