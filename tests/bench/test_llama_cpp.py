"""The llama_cpp bench method: llama.cpp (llama-cpp-python, built from C++ by `benchmarks/install_llama_cpp.sh`) on the
base's GGUF file, beside HF `generate` in one run. Where the package is not installed its real runs are skipped;
what users meet without it (the errors that say how to get it) is tested everywhere."""

import json
import sys

import pytest

from hamburger.bench.methods import LlamaCppMethod, kv_slot_bytes
from hamburger.bench.run import peer_gguf
from hamburger.cli.main import main
from hamburger.core.base import bundled_gguf_path
from hamburger.errors import HamburgerError
from tests.helpers import tiny_base


def test_kv_slot_bytes_is_every_layer_key_and_value():
    """SmolLM2-135M's shape: 30 layers, 3 key/value heads of 64 channels, f16 -> 30 * 2 * 3 * 64 * 2 bytes."""
    from transformers import LlamaConfig

    smollm2 = LlamaConfig(hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3)
    assert kv_slot_bytes(smollm2) == 23040 and kv_slot_bytes(smollm2, 4) == 46080
    assert kv_slot_bytes(tiny_base().config) == 4 * 2 * 2 * 16 * 2  # (4 layers, 2 kv heads of 64 / 4 channels)


def test_the_gguf_file_is_the_bundled_base_or_given(tmp_path):
    assert peer_gguf(None, "smollm2-135m-instruct") == str(bundled_gguf_path("smollm2-135m-instruct"))
    with pytest.raises(HamburgerError, match="--gguf FILE"):
        peer_gguf(None, str(tmp_path / "some-hf-folder"))
    with pytest.raises(HamburgerError, match="does not exist"):
        peer_gguf(str(tmp_path / "missing.gguf"), "smollm2-135m-instruct")


def test_without_llama_cpp_python_the_method_says_how_to_build_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # (as where it is not installed: its import fails)
    with pytest.raises(HamburgerError, match="install_llama_cpp.sh"):
        LlamaCppMethod("any.gguf", 1, [2], 1)


@pytest.mark.slow
def test_llama_cpp_runs_the_bundled_base_beside_hf_generate(tmp_path):
    """On the bundled GGUF (the base's own Q4_1 weights), greedy, llama.cpp answers a plain question as HF `generate`
    does on the dequantized weights (its arithmetic is its own, so only a short answer is compared), one forward
    per token, a whole f16 slot per token held; with prompt lookup, fewer forwards where the answer repeats its
    prompt. The bench runs both beside HF `generate` and names their file."""
    pytest.importorskip("llama_cpp")
    from hamburger.bench.methods import HFMethod
    from hamburger.core.base import load_base
    from hamburger.engine.prompt import encode_prompt

    base, tokenizer, _ = load_base("smollm2-135m-instruct")
    ids = encode_prompt(tokenizer, "What is 2+2?")
    eos = base.generation_config.eos_token_id
    peer = LlamaCppMethod(str(bundled_gguf_path("smollm2-135m-instruct")), 2, eos if isinstance(eos, list) else [eos],
                          kv_slot_bytes(base.config))
    run, hf = peer.run(ids, 16), HFMethod(base, tokenizer).run(ids, 16)
    assert run.token_ids[:6] == hf.token_ids[:6] and run.forwards == run.tokens
    assert run.token_ids[-1] in peer.eos and run.tokens < 16  # (a short answer, ended by its EOS)
    assert run.kv_slots == len(ids) + run.tokens - 1 and run.kv_bytes == run.kv_slots * 23040
    assert peer.run(ids, 16).token_ids == run.token_ids and peer.run(ids, 3).tokens == 3
    # with prompt lookup, a repeated sentence takes fewer forwards than tokens (several positions in one)
    repeat = encode_prompt(tokenizer, "Repeat this sentence three times: the cat sat on the mat.")
    lookup = LlamaCppMethod(str(bundled_gguf_path("smollm2-135m-instruct")), 2, peer.eos, kv_slot_bytes(base.config),
                            lookup=10)
    plain, drafted = peer.run(repeat, 16), lookup.run(repeat, 16)
    assert lookup.name == "llama_cpp_lookup" and drafted.token_ids[:6] == plain.token_ids[:6]
    assert plain.forwards == plain.tokens and drafted.forwards < drafted.tokens
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "What is 2+2?", "category": "chat"}) + "\n")
    out = tmp_path / "bench"
    assert main(["bench", "--quick", "--prompts", str(prompts), "--out", str(out), "--methods",
                 "hf_generate,llama_cpp,llama_cpp_lookup",
                 "--lengths", "", "--batch-sizes", "", "--max-new-tokens", "16", "--threads", "2"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert {r["method"] for r in result["rows"]} == {"hf_generate", "llama_cpp", "llama_cpp_lookup"}
    assert result["model"]["gguf"]["file"] == bundled_gguf_path("smollm2-135m-instruct").name
    assert result["model"]["gguf"]["llama_cpp_python"]
