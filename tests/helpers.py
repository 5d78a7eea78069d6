"""Plain helpers shared by test modules in several folders (fixtures live in the conftest.py files).

Tiny random models and their checkpoints, the engine's reference prompts and checks, a fake tokenizer, a
HumanEval problem and sandbox escapes, and a real `hamburger serve` process with its client helpers.
Test modules import from here (``from tests.helpers import ...``), never from each other.
"""

import copy
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]  # the repository root


# ------------------------------------------------------------------------------ tiny models and tokenizer
CHARS = [chr(c) for c in range(32, 127)] + ["\n"]
SPECIALS = ["<pad>", "<s>", "</s>", "<eos2>"]


def make_char_tokenizer(tokens: list[str] | None = None):
    """A real fast tokenizer with one token per character (vocab 100), ids: pad 0, bos 1, eos 2 and 3; ``tokens``:
    other tokens in id order, specials first (e.g. another vocabulary for an assistant model).
    Tests get the default from the session-scoped `char_tokenizer` fixture (tests/conftest.py)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(tokens or SPECIALS + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    fast.add_special_tokens({"additional_special_tokens": ["<eos2>"]})
    return fast


# mixtures of experts: every layer's, or a dense first layer's and experts after (GLM-4.5's, DeepSeek-V3's)
MOE = {"num_experts_per_tok": 2, "moe_intermediate_size": 32}
DENSE_FIRST = {**MOE, "n_routed_experts": 4, "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1}
# family -> (transformers config class, causal LM class, settings beside the common ones): the base families the
# engine's equalities are checked on (tests/core/test_families.py); llama and qwen2 serve most other tests
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "llama-eager": ("LlamaConfig", "LlamaForCausalLM", {"attn_implementation": "eager"}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", {}),  # (its last layer has no rotary embedding)
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 16}),
    # sliding windows of 8 positions: in every layer, in the last two, in alternate ones (eager attention with its
    # scores and final logits soft-capped, at Gemma 2's own caps), in three of four (own rotary per type)
    "mistral-sliding": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 8}),
    "qwen2-sliding": ("Qwen2Config", "Qwen2ForCausalLM", {"use_sliding_window": True, "sliding_window": 8,
                                                          "max_window_layers": 2}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 16, "sliding_window": 8}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"head_dim": 16, "sliding_window": 8, "layer_types": [
        "sliding_attention", "full_attention", "sliding_attention", "sliding_attention"]}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {}),
    # (its multipliers at granite-3.0-2b's values: on the embeddings, each block's output, the scores and the logits)
    "granite": ("GraniteConfig", "GraniteForCausalLM", {"embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                                                        "attention_multiplier": 0.015625, "logits_scaling": 8.0}),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", {}),
    # (attention and MLP side by side after one LayerNorm; its logits scaled)
    "cohere": ("CohereConfig", "CohereForCausalLM", {"logit_scale": 0.0625}),
    # (norms on both sides of each block, identities here; logits multiplied by `logits_scaling`)
    "hyperclovax": ("HyperCLOVAXConfig", "HyperCLOVAXForCausalLM", {"logits_scaling": 4.0}),
    # (norms after each block; sliding layers rotate, its full-attention layer does not)
    "exaone4": ("Exaone4Config", "Exaone4ForCausalLM", {"head_dim": 16, "sliding_window": 8, "layer_types": [
        "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]}),
    "arcee": ("ArceeConfig", "ArceeForCausalLM", {}),  # (an MLP without a gate)
    "vaultgemma": ("VaultGemmaConfig", "VaultGemmaForCausalLM", {"head_dim": 16}),  # (Llama's norms, Gemma 2's names)
    # (norms on each query and key head after its rotation)
    "hunyuan": ("HunYuanDenseV1Config", "HunYuanDenseV1ForCausalLM", {"head_dim": 16}),
    # mixtures of experts (their MLPs run their own forward in the lean pass); GLM-4.5 with a dense first layer and
    # half of each head rotated; gpt-oss with attention sinks (read by its own eager attention) and alternate sliding
    # layers
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2}),
    "qwen3moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", {**MOE, "head_dim": 16, "num_experts": 4}),
    "glm4moe": ("Glm4MoeConfig", "Glm4MoeForCausalLM", {**DENSE_FIRST, "head_dim": 16}),
    # (its experts named `block_sparse_moe`, with Granite's multipliers)
    "granitemoe": ("GraniteMoeConfig", "GraniteMoeForCausalLM", {
        "num_local_experts": 4, "num_experts_per_tok": 2, "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
        "attention_multiplier": 0.015625, "logits_scaling": 6.0}),
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 16,
                                                      "sliding_window": 8}),
}
# Families whose layers the lean pass does not run, so the engine runs transformers' own: DeepSeek's latent attention
# (with a dense first layer and experts after).
OWN_LAYER_FAMILIES = {
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM", {
        **DENSE_FIRST, "num_key_value_heads": 4, "kv_lora_rank": 16, "q_lora_rank": 16, "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 8, "v_head_dim": 16}),
}


def tiny_base(family: str = "llama", seed: int = 0, vocab: int = 100, **settings):
    """A tiny random causal LM of ``family`` (a key of `FAMILIES` or `OWN_LAYER_FAMILIES`); ``settings`` override its
    config's."""
    import transformers

    config_class, model_class, extra = {**FAMILIES, **OWN_LAYER_FAMILIES}[family]
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=128, max_position_embeddings=1024,
                  bos_token_id=1, eos_token_id=[2, 3], pad_token_id=0, tie_word_embeddings=True)
    config = getattr(transformers, config_class)(**{**common, **extra, **settings})
    model = getattr(transformers, model_class)(config)
    model.generation_config.eos_token_id = [2, 3]
    model.generation_config.pad_token_id = 0
    return model.eval()


def tiny_hamburger(family: str = "llama", seed: int = 0, max_steps: int = 4, randomize: bool = True,
                   base_settings: dict | None = None, **cfg):
    """A HAMburger on a tiny random base (``base_settings``: `tiny_base`'s); `randomize` gives the grafted modules
    non-trivial weights."""
    from hamburger.core.config import HamburgerConfig
    from hamburger.core.model import HamburgerModel

    base = tiny_base(family, seed, **(base_settings or {}))
    model = HamburgerModel(base, HamburgerConfig(max_steps=max_steps, **cfg)).eval()
    if randomize:
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for p in list(model.embedder.parameters()) + list(model.stop_head.parameters()):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model


def tiny_long_group_model():
    """The tiny Llama (seed 5) of the checkpoints below: its stop head makes long groups at confidence 0.5."""
    m = tiny_hamburger("llama", seed=5)
    with torch.no_grad():
        m.stop_head.net[2].bias.fill_(-2.0)
    return m


# ------------------------------------------------------------------------------ tiny checkpoints
def counted_generation(calls: list, stop_after: float = float("inf")):
    """A stand-in for `Generation` (an eval's engine) that counts the batches it starts in ``calls`` and stops the run
    at batch ``stop_after`` + 1 as Ctrl-C does (`KeyboardInterrupt`)."""
    from hamburger.engine.generate import Generation

    def start(*args, **kwargs):
        calls.append(1)
        if len(calls) > stop_after:
            raise KeyboardInterrupt
        return Generation(*args, **kwargs)
    return start


def save_tiny_checkpoint(tmp_path, tokenizer, model=None):
    """A tiny random HAMburger checkpoint (base in tmp_path/base, checkpoint in tmp_path/ckpt) for CLI tests;
    the model is `tiny_long_group_model()` unless given, the tokenizer is saved as it is."""
    from hamburger.core.base import BaseInfo, weights_fingerprint
    from hamburger.core.checkpoint import save_checkpoint

    if model is None:
        model = tiny_long_group_model()
    base_dir = tmp_path / "base"
    model.base.save_pretrained(base_dir)
    tokenizer.save_pretrained(base_dir)
    return save_checkpoint(model, tmp_path / "ckpt", BaseInfo(str(base_dir), str(base_dir),
                                                              weights_fingerprint(model.base)))


CHAT_TEMPLATE = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


def save_tiny_chat_checkpoint(out: Path, char_tokenizer) -> Path:
    """`save_tiny_checkpoint` with a copy of the tokenizer that has a chat template (CHAT_TEMPLATE): the
    serve tests' checkpoint (base in out/base)."""
    tokenizer = copy.deepcopy(char_tokenizer)
    tokenizer.chat_template = CHAT_TEMPLATE
    return save_tiny_checkpoint(out, tokenizer)


def save_tiny(tmp_path, char_tokenizer, seed=3):
    """A checkpoint of `tiny_hamburger("llama", seed)`: returns (model, checkpoint folder, base folder)."""
    from hamburger.core.base import BaseInfo, weights_fingerprint
    from hamburger.core.checkpoint import save_checkpoint

    base_dir = tmp_path / "base"
    model = tiny_hamburger("llama", seed=seed)
    model.base.save_pretrained(base_dir)
    char_tokenizer.save_pretrained(base_dir)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(model.base))
    ckpt = save_checkpoint(model, tmp_path / "ckpt", info)
    return model, ckpt, base_dir


def save_tiny_lora(tmp_path, char_tokenizer, scope: str = "all"):
    """A tiny checkpoint whose base carries non-zero LoRA adapters (as after `train --set base_mode=lora`) acting at
    ``scope`` (its `lora_scope`)."""
    from hamburger.core.base import BaseInfo, weights_fingerprint
    from hamburger.core.checkpoint import save_checkpoint
    from hamburger.core.lora import add_lora, lora_modules

    model, _, base_dir = save_tiny(tmp_path, char_tokenizer)
    model.config.lora_scope = scope
    add_lora(model.base, r=2, alpha=4.0)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _, module in lora_modules(model.base):
            module.lora_B.copy_(torch.randn(module.lora_B.shape, generator=gen) * 0.5)
    info = BaseInfo(str(base_dir), str(base_dir), weights_fingerprint(tiny_base("llama", seed=3)))
    return model, save_checkpoint(model, tmp_path / "lora_ckpt", info)


# ------------------------------------------------------------------------------ the engine's references
PROMPTS = [[1, 40, 41, 42, 43], [1, 50, 60, 70, 80, 90, 22, 23, 24], [1, 77]]


def hf_greedy(base, prompt, n):
    out = base.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False, eos_token_id=[2, 3],
                        pad_token_id=0, attention_mask=torch.ones(1, len(prompt), dtype=torch.long))
    return out[0, len(prompt):].tolist()


def assert_engine_matches_training_forward(model, tokenizer):
    """Decode each prompt with merges; the teacher-forced training forward on the result gives the same
    logits token by token (the engine and training compute one function)."""
    from hamburger.core.packing import TrainBatch
    from hamburger.engine.generate import Generation
    from hamburger.engine.sampling import DecodingConfig

    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-2.0)  # make long groups likely
    for prompt in PROMPTS:
        run = Generation(model, tokenizer, [prompt], DecodingConfig(max_new_tokens=20, confidence=0.5),
                         trace_logits=True)
        res = run.run()[0]
        assert max(res.groups) > 1, "the test needs merged groups"
        with torch.no_grad():
            out = model.training_forward(TrainBatch([prompt], [res.token_ids], [res.groups]))
        torch.testing.assert_close(out.token_logits, torch.stack(run.logits[0]), rtol=1e-4, atol=1e-4)
        assert out.targets.tolist() == res.token_ids


# ------------------------------------------------------------------------------ data
class FakeTokenizer:
    """Just a vocabulary of n tokens: enough for vocab_hash and the dataset checks."""

    def __init__(self, n):
        self.vocab = {f"t{i}": i for i in range(n)}

    def get_vocab(self):
        return dict(self.vocab)

    def __len__(self):
        return len(self.vocab)


def write_dataset(path: Path, tokenizer, rows: int = 24, seed: int = 0, max_steps: int = 4, singleton=False,
                  meta_overrides: dict | None = None, entropies: bool = False) -> Path:
    """A dataset in the `hamburger segment` format: jsonl rows + OUT.meta.json (random groups; with
    ``entropies`` also random entropies in [0, 4) nats, drawn after all the rows)."""
    from hamburger.data.dataset import vocab_hash

    g = torch.Generator().manual_seed(seed)
    lines = []
    for i in range(rows):
        p = [1] + torch.randint(10, 60, (int(torch.randint(3, 8, (1,), generator=g)),), generator=g).tolist()
        r = torch.randint(10, 60, (int(torch.randint(4, 12, (1,), generator=g)),), generator=g).tolist()
        groups, left = [], len(r)
        while left:
            n = 1 if singleton else min(left, int(torch.randint(1, max_steps + 1, (1,), generator=g)))
            groups.append(n)
            left -= n
        lines.append({"id": f"r{i}", "prompt_ids": p, "response_ids": r, "groups": groups})
    for row in lines if entropies else ():
        row["entropies"] = [round(4 * float(x), 4) for x in torch.rand(len(row["response_ids"]), generator=g)]
    path.write_text("".join(json.dumps(row) + "\n" for row in lines))
    meta = {"kind": "hamburger-dataset", "format": 1, "max_steps": max_steps, "settings": {"max_steps": max_steps},
            "tokenizer": {"name": "chars", "vocab_size": len(tokenizer), "vocab_hash": vocab_hash(tokenizer)},
            **(meta_overrides or {})}
    Path(f"{path}.meta.json").write_text(json.dumps(meta))
    return path


# ------------------------------------------------------------------------------ eval: HumanEval and the sandbox
PROBLEM = {"prompt": "def add(a, b):\n    \"\"\"Add two numbers.\"\"\"\n", "entry_point": "add",
           "test": "def check(f):\n    assert f(2, 3) == 5\n    assert f(-1, 1) == 0\n"}

# name -> statement that tries to leave a trace in folder D (victim file V, listener on port P)
ESCAPE_ACTIONS = {
    "posix.system": "import posix; posix.system('touch {D}/system')",
    "os.posix_spawn": "import os; os.waitpid(os.posix_spawn('/bin/sh', ['sh', '-c', 'touch {D}/spawn'], {{}}), 0)",
    "io.open": "import io; io.open('{D}/io_open', 'w').write('x')",
    "pathlib.write_text": "import pathlib; pathlib.Path('{D}/pathlib').write_text('x')",
    "os.open+os.write": "import os; os.write(os.open('{D}/os_open', os.O_WRONLY | os.O_CREAT, 0o666), b'x')",
    "posix.unlink": "import posix; posix.unlink('{V}')",
    "_socket.connect": "import _socket; s = _socket.socket(); s.settimeout(3); s.connect(('127.0.0.1', {P}))",
}


def escape_code(action: str, place: "Outside") -> str:
    """Module-level code that tries one escape, then exits with 'tried: <outcome>'."""
    statement = action.format(D=place.folder, V=place.victim, P=place.port)
    return (f"try:\n    {statement}\n    outcome = 'done'\nexcept Exception as e:\n    outcome = repr(e)\n"
            "raise SystemExit('tried: ' + outcome)\n")


class Outside:
    """A world-writable folder with a victim file and a listening socket, all outside the sandbox
    (the `outside` fixture of tests/eval/conftest.py)."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="hamburger-outside-"))
        self.folder.chmod(0o777)
        self.victim = self.folder / "victim.txt"
        self.victim.write_text("precious")
        self.victim.chmod(0o666)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]

    def traces(self) -> list[str]:
        """Everything an escape left behind: new files, a lost victim, a connection to the listener."""
        found = sorted(p.name for p in self.folder.iterdir() if p.name != "victim.txt")
        if not self.victim.exists() or self.victim.read_text() != "precious":
            found.append("victim changed")
        self.listener.setblocking(False)
        try:
            self.listener.accept()[0].close()
            found.append("connection")
        except BlockingIOError:
            pass
        self.listener.setblocking(True)
        return found

    def close(self):
        self.listener.close()
        for p in self.folder.iterdir():
            p.unlink()
        self.folder.rmdir()


# ------------------------------------------------------------------------------ serve: a real server process
KEY = "sk-test-key"
MAX_QUEUE = 40  # the load test sends 32 requests at once: none may be refused
LOOKUP, FOLD = 4, "forwards:2"  # the serve tests' --lookup and --fold (the verify modes' drafting and folding)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`hamburger serve` in a subprocess (httpx and openai are imported on use: the serve test modules skip
    without them)."""

    def __init__(self, ckpt, log: Path, *extra: str):
        self.port, self.log = free_port(), log
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hamburger.cli", "serve", "--model", str(ckpt), "--port", str(self.port),
             "--threads", "1", "--device", "cpu", "--log-level", "warning", *extra],
            stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, cwd=ROOT)

    def wait(self, timeout: float = 120.0) -> "Server":
        import httpx

        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                pytest.fail(f"the server exited ({self.proc.returncode}):\n{self.log.read_text()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        pytest.fail(f"the server did not come up:\n{self.log.read_text()}")

    def health(self) -> dict:
        import httpx

        return httpx.get(self.url + "/health", timeout=5).json()

    def client(self, key: str = KEY, **kw):
        import openai

        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, timeout=60, **kw)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def error_of(exc) -> dict:
    """The OpenAI-shaped error of a pytest.raises result, an openai exception or an httpx response."""
    exc = getattr(exc, "value", exc)
    body = getattr(exc, "response", exc).json()
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    return body["error"]


def long_body(checkpoint, **kw) -> dict:
    """A request that runs for seconds on the tiny model unless cancelled: one token per forward up to the context."""
    return {"model": "ckpt", "prompt": "hello", "max_tokens": checkpoint[1].context_length - 16, "confidence": 1.0,
            "stream": True, **kw}


# ------------------------------------------------------------------------------ training runs and adapters
def train_config(env, out, **kw):
    """A short training run's config on the `env` fixture's base and data (tests/conftest.py); ``kw`` overrides."""
    from hamburger.train.config import TrainConfig

    settings = dict(base=env["base"], data=env["data"], out=str(out), batch_size=6, epochs=100.0, max_train_steps=3,
                    lr_grafted=3e-3, lr_base=1e-3, warmup_steps=1, threads=1, progress=False, log_every=1,
                    save_every=0, decoder_layers=1, lora_r=4, decoder_init="random")
    settings.update(kw)
    return TrainConfig.from_dict(settings)


def perturb_lora(trainer) -> None:
    """Non-zero adapters, so that the LoRA model differs from its teacher (B = 0 at init)."""
    from hamburger.core.lora import lora_modules

    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, m in lora_modules(trainer.model.base):
            for key in m.adapter_keys()[1::2]:  # every set's B
                getattr(m, key).copy_(torch.randn(getattr(m, key).shape, generator=g) * 0.2)


def adapted(model, seed=0, std=0.5):
    """Put non-zero LoRA adapters on the model's base (as after training), as many sets as its scope uses."""
    from hamburger.core.lora import add_lora, lora_modules, set_keys

    add_lora(model.base, r=2, alpha=4.0, sets=model.config.lora_sets)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, module in lora_modules(model.base):
            for i in range(module.sets):
                b = getattr(module, set_keys(i)[1])
                b.copy_(torch.randn(b.shape, generator=gen) * std)
    return model
