"""Decoding methods measured side by side: HAMburger and the peers a user would pick instead.

Every method decodes greedily (or, given ``sampling`` settings, samples with them, seeded with `SAMPLING_SEED` on
every prompt) and returns a `Measurement` with the same definitions:
  ttft_s    prompt forward until the first token is known
  decode_s  the rest of the generation; decode tok/s = (tokens - first step's tokens) / decode_s
  forwards  full base-model forwards (counted by a hook on the last decoder layer, so early-exit
            drafts, which stop short of it, and an assistant model's drafting forwards are not counted)
  kv_bytes  measured bytes of the base KV cache at the end (prompt included; not an assistant model's own cache,
            which HF keeps out of reach); `output_kv_bytes`
            is the part written for generated tokens (what grows with output length), the prompt's
            tokens taken at a whole slot each (a cache that stores its prompt coarser holds less than
            that: compare whole caches, the summary's ``kv_vs_hf``)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from hamburger.engine.cache import cache_bytes
from hamburger.engine.folding import DEFAULT_FOLD
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.generate import Generation
from hamburger.engine.micro import compile_micro_loop
from hamburger.core.model import HamburgerModel
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.sampling import DecodingConfig


SAMPLING_SEED = 0  # a sampling method's seed on every prompt (HF `generate`: the global seed before each call)


@dataclass
class Measurement:
    method: str
    tokens: int
    forwards: int
    ttft_s: float
    decode_s: float
    kv_bytes: int
    kv_slots: int
    token_ids: list[int]
    prompt_tokens: int = 0
    first_tokens: int = 1  # tokens known at ttft (HAMburger's first group)

    @property
    def output_kv_bytes(self) -> float:
        if not self.kv_slots:
            return 0.0
        return self.kv_bytes * max(0, self.kv_slots - self.prompt_tokens) / self.kv_slots

    @property
    def decode_tok_s(self) -> float:
        n = self.tokens - self.first_tokens
        return n / self.decode_s if self.decode_s > 0 and n > 0 else 0.0

    @property
    def tau(self) -> float:
        return self.tokens / self.forwards if self.forwards else 0.0


class ForwardCounter:
    """Counts full forwards of a base model (calls that reach its last decoder layer)."""

    def __init__(self, base):
        self.count = 0
        self._handle = base_decoder_stack(base).layers[-1].register_forward_hook(self._hook)

    def _hook(self, *_):
        self.count += 1

    def close(self):
        self._handle.remove()


class HamburgerMethod:
    """The HAMburger engine at one confidence (1.0 = the base model through our own loop and cache)."""

    def __init__(self, model: HamburgerModel, tokenizer, confidence: float, name: str | None = None,
                 static_cache: bool = False, micro_loop: str = "host"):
        self.model, self.tokenizer, self.confidence = model, tokenizer, confidence
        self.name = name or f"hamburger@{confidence:g}"
        self.static_cache, self.micro_loop = static_cache, micro_loop

    def _generation(self, prompts: list[list[int]], cfg: DecodingConfig) -> Generation:
        return Generation(self.model, self.tokenizer, prompts, cfg, static_cache=self.static_cache,
                          micro_loop=self.micro_loop)

    def run(self, prompt_ids: list[int], max_new_tokens: int, ignore_eos: bool = False) -> Measurement:
        cfg = DecodingConfig(max_new_tokens=max_new_tokens, confidence=self.confidence, ignore_eos=ignore_eos)
        r = self._generation([prompt_ids], cfg).run()[0]
        return Measurement(self.name, r.tokens, r.forwards, r.prefill_s, r.decode_s, r.kv_bytes, r.kv_slots,
                           r.token_ids, prompt_tokens=len(prompt_ids), first_tokens=r.groups[0])

    def run_batch(self, prompts: list[list[int]], max_new_tokens: int, ignore_eos: bool = False) -> list[list[int]]:
        cfg = DecodingConfig(max_new_tokens=max_new_tokens, confidence=self.confidence, ignore_eos=ignore_eos)
        return [r.token_ids for r in self._generation(prompts, cfg).run()]


class VerifyMethod:
    """Verify mode (lossless): the MSD drafts, the base verifies. ``model`` carries the unchanged base; with ``fold``
    (a `folding.Folding`; not lossless) the checkpoint itself, whose adapters read the folded slots. ``lookup`` (a
    `lookup.PromptLookup`) drafts by prompt lookup where the text's last n-gram occurred before, ``ngrams`` (an
    `ngrams.NgramDrafts`) where it did not and the table knows the text's last tokens. ``drafter`` (a
    `modules.Drafter`): what drafts instead of the model's default (its verify drafter, else its own MSD).
    ``max_draft``: the most MSD drafts per step (`VerifyGeneration`'s). ``full_heads``: with ``fold``, the heads that
    keep every slot (`VerifyGeneration`'s; None: the checkpoint's own)."""

    def __init__(self, model: HamburgerModel, tokenizer, confidence: float | None = None, draft: int | None = None,
                 name: str | None = None, draft_vocab=None, fold=None, lookup=None, sampling: dict | None = None,
                 ngrams=None, drafter=None, max_draft: int | None = None, full_heads: list | None = None):
        self.model, self.tokenizer, self.confidence, self.draft = model, tokenizer, confidence, draft
        self.draft_vocab, self.fold, self.lookup, self.sampling = draft_vocab, fold, lookup, sampling
        self.ngrams, self.drafter, self.max_draft, self.full_heads = ngrams, drafter, max_draft, full_heads
        self.last = None
        self.name = name or ("verify" if draft is None and confidence is None else
                             f"verify@k{draft}" if draft is not None else f"verify@{confidence:g}")

    def _config(self, max_new_tokens: int, ignore_eos: bool) -> DecodingConfig:
        sampling = dict(self.sampling, seed=SAMPLING_SEED) if self.sampling else {}
        return DecodingConfig(max_new_tokens=max_new_tokens, confidence=self.confidence, ignore_eos=ignore_eos,
                              **sampling)

    def _generation(self, prompts: list[list[int]], max_new_tokens: int, ignore_eos: bool):
        from hamburger.engine.verify import VerifyGeneration

        return VerifyGeneration(self.model, self.tokenizer, prompts, self._config(max_new_tokens, ignore_eos),
                                draft=self.draft, draft_vocab=self.draft_vocab, fold=self.fold, lookup=self.lookup,
                                ngrams=self.ngrams, drafter=self.drafter, max_draft=self.max_draft,
                                full_heads=self.full_heads)

    def run(self, prompt_ids: list[int], max_new_tokens: int, ignore_eos: bool = False) -> Measurement:
        r = self._generation([prompt_ids], max_new_tokens, ignore_eos).run()[0]
        self.last = r  # draft statistics of the latest run (acceptance by position)
        return Measurement(self.name, r.tokens, r.forwards, r.prefill_s, r.decode_s, r.kv_bytes, r.kv_slots,
                           r.token_ids, prompt_tokens=len(prompt_ids), first_tokens=r.groups[0])

    def run_batch(self, prompts: list[list[int]], max_new_tokens: int, ignore_eos: bool = False) -> list[list[int]]:
        return [r.token_ids for r in self._generation(prompts, max_new_tokens, ignore_eos).run()]


class HFMethod:
    """The base model through Hugging Face `generate` (plain, prompt lookup, early exit or assisted by a smaller
    model: `assisted_kwargs`); with ``sampling`` (temperature, top_p, top_k), `do_sample` with them."""

    def __init__(self, base, tokenizer, /, name: str = "hf_generate", sampling: dict | None = None,
                 **generate_kwargs):  # (``generate_kwargs`` may hold a `tokenizer` of its own: `assisted_kwargs`)
        self.base, self.tokenizer, self.name, self.kwargs = base, tokenizer, name, generate_kwargs
        self.sampling = dict(do_sample=True, top_k=0, **sampling) if sampling else dict(do_sample=False)  # (HF's
        # default top_k of 50 is off unless ``sampling`` sets one, as in `DecodingConfig`)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_id = pad

    def _generate(self, ids: torch.Tensor, mask: torch.Tensor, max_new_tokens: int, ignore_eos: bool = False):
        extra = {"min_new_tokens": max_new_tokens} if ignore_eos else {}
        if self.sampling["do_sample"]:
            torch.manual_seed(SAMPLING_SEED)
        return self.base.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                                  pad_token_id=self.pad_id, return_dict_in_generate=True, **self.sampling,
                                  **extra, **self.kwargs)

    def run(self, prompt_ids: list[int], max_new_tokens: int, ignore_eos: bool = False) -> Measurement:
        ids = torch.tensor([prompt_ids], device=self.base.device)
        mask = torch.ones_like(ids)
        with torch.inference_mode():
            start = time.perf_counter()
            self._generate(ids, mask, 1)
            _sync(ids.device)
            ttft = time.perf_counter() - start
            counter = ForwardCounter(self.base)
            try:
                start = time.perf_counter()
                out = self._generate(ids, mask, max_new_tokens, ignore_eos)
                _sync(ids.device)
                total = time.perf_counter() - start
            finally:
                counter.close()
        tokens = out.sequences[0, len(prompt_ids):].tolist()
        kv, slots = cache_bytes(out.past_key_values)
        return Measurement(self.name, len(tokens), counter.count, ttft, max(total - ttft, 1e-9), kv, slots, tokens,
                           prompt_tokens=len(prompt_ids))

    def run_batch(self, prompts: list[list[int]], max_new_tokens: int, ignore_eos: bool = False) -> list[list[int]]:
        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), self.pad_id, device=self.base.device)
        mask = torch.zeros_like(ids)
        for b, p in enumerate(prompts):  # left padding, as HF expects for decoder-only batches
            ids[b, width - len(p):] = torch.tensor(p, device=ids.device)
            mask[b, width - len(p):] = 1
        with torch.inference_mode():
            out = self._generate(ids, mask, max_new_tokens, ignore_eos)
        eos = set() if ignore_eos else set(_as_list(self.base.generation_config.eos_token_id))
        rows = []
        for b in range(len(prompts)):
            row = []
            for t in out.sequences[b, width:].tolist():
                row.append(t)
                if t in eos:
                    break
            rows.append(row)
        return rows


class LlamaCppMethod:
    """llama.cpp (through llama-cpp-python) on a GGUF file of the base, greedy, batch 1: the peer a user of a CPU picks
    first. It is given the prompt's token ids, so both tokenize alike; its arithmetic is its own (the GGUF's quantized
    weights, activations rounded to 8 bits for their products), so its answers may part from HF's. ``kv_slot_bytes``:
    one slot of its cache (every layer's key and value at its default f16); its KV figure is the slots in use, as HF's
    (llama.cpp allocates the whole ``context`` up front). Its threads spin at their barriers: a busy core elsewhere
    slows it far more than it slows torch, so time it on an idle machine. With ``lookup`` N, llama-cpp-python's prompt
    lookup drafts up to N tokens a forward (its `LlamaPromptLookupDecoding`; lossless) and the method is
    llama_cpp_lookup; its forwards are counted as they are made."""

    def __init__(self, gguf: str, threads: int, eos: list[int], kv_slot_bytes: int, context: int = 4096,
                 lookup: int = 0):
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
        except ImportError as e:
            from hamburger.errors import HamburgerError

            raise HamburgerError("the llama_cpp methods need llama-cpp-python: bash benchmarks/install_llama_cpp.sh "
                                 "builds it (a C++ build of some minutes)") from e
        self.name = "llama_cpp_lookup" if lookup else "llama_cpp"
        self.llm = Llama(model_path=str(gguf), n_ctx=context, n_batch=context, n_threads=threads,
                         n_threads_batch=threads, verbose=False,
                         draft_model=LlamaPromptLookupDecoding(num_pred_tokens=lookup) if lookup else None)
        self.eos, self.kv_slot_bytes = set(eos), kv_slot_bytes
        self.weight_bytes = gguf_tensor_bytes(gguf)  # (what a forward reads: the bench's read bandwidth)
        self.forwards, evaluate = 0, self.llm.eval

        def counted(tokens):
            self.forwards += 1
            return evaluate(tokens)
        self.llm.eval = counted

    def run(self, prompt_ids: list[int], max_new_tokens: int) -> Measurement:
        self.llm.reset()  # (no prompt of an earlier run is read from its cache)
        self.forwards = 0
        tokens: list[int] = []
        start = time.perf_counter()
        ttft = 0.0
        steps = self.llm.generate(prompt_ids, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0)
        for token in steps:
            tokens.append(token)
            if len(tokens) == 1:
                ttft = time.perf_counter() - start
            if token in self.eos or len(tokens) == max_new_tokens:
                break
        steps.close()
        total = time.perf_counter() - start
        slots = len(prompt_ids) + len(tokens) - 1  # (the last token is never read back)
        return Measurement(self.name, len(tokens), self.forwards, ttft, max(total - ttft, 1e-9),
                           slots * self.kv_slot_bytes, slots, tokens, prompt_tokens=len(prompt_ids))


def gguf_tensor_bytes(path: str) -> int:
    """The bytes of a GGUF file's tensors, as stored (quantized blocks included; its metadata left out)."""
    from gguf import GGUFReader

    return sum(int(t.n_bytes) for t in GGUFReader(path).tensors)


def kv_slot_bytes(config, element_bytes: int = 2) -> int:
    """One token's slot in a plain KV cache of a model of ``config``: every layer's key and value, its key/value
    heads' channels at ``element_bytes`` each (2: llama.cpp's default f16)."""
    text = config.get_text_config()
    heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return text.num_hidden_layers * 2 * heads * head_dim * element_bytes


def assisted_kwargs(base, tokenizer, assistant, assistant_tokenizer) -> dict:
    """`generate` arguments for HF's assisted generation: ``base`` checks the drafts of ``assistant`` (a smaller
    causal LM, on the base's device), by token id where their vocabularies are one size (HF's rule), else by text
    (HF's universal assisted decoding, which needs both tokenizers). An assistant of the base's vocabulary size whose
    tokenizer gives other ids is refused: HF would read its ids as the base's."""
    from hamburger.errors import HamburgerError

    if base.config.get_text_config().vocab_size != assistant.config.get_text_config().vocab_size:
        return {"assistant_model": assistant, "tokenizer": tokenizer, "assistant_tokenizer": assistant_tokenizer}
    if tokenizer.get_vocab() != assistant_tokenizer.get_vocab():
        raise HamburgerError("the assistant's vocabulary is the base's size but its tokenizer gives other ids: HF's "
                             "assisted generation would read its ids as the base's (give an assistant with the "
                             "base's tokenizer, or one whose vocabulary is another size)")
    return {"assistant_model": assistant}


def _sync(device: torch.device) -> None:
    """Wait for queued GPU work, so that wall-clock time covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compiled_hf_kwargs(device: torch.device, backend: str = "inductor") -> dict:
    """`generate` arguments for HF's compiled decoding: a static cache, the forward compiled (also on a CPU)."""
    from transformers import CompileConfig

    config = CompileConfig(backend=backend, mode="reduce-overhead" if device.type == "cuda" else "default")
    config._compile_all_devices = True  # HF compiles on GPUs only unless told (transformers' own test switch)
    return {"cache_implementation": "static", "compile_config": config}


def _as_list(value) -> list[int]:
    if value is None:
        return []
    return [value] if isinstance(value, int) else list(value)


def build_methods(model: HamburgerModel, tokenizer, names: list[str], confidences: list[float],
                  prompt_lookup: int = 10, early_exit_layer: int | None = None,
                  reference: HamburgerModel | None = None, compile_backend: str | None = None,
                  micro_loop: str = "host", folds: list[str] | None = None,
                  fold_models: dict[str, HamburgerModel] | None = None, assistant: tuple | None = None,
                  gguf: str | None = None, threads: int = 1) -> list:
    """Instantiate methods by name: hamburger (one per confidence), own_loop, hf_generate,
    prompt_lookup, early_exit, verify, verify_fold (verify mode folding its cache: one method per spec of ``folds``,
    default `VERIFY_FOLD`, named ``verify_fold@SPEC``, each on its model of ``fold_models``, default ``model`` itself,
    whose adapters read the merged slots; `loading.fold_model`), assisted (HF's assisted generation drafted by
    ``assistant``, a smaller model and its tokenizer: `assisted_kwargs`), llama_cpp and llama_cpp_lookup (the GGUF
    file ``gguf`` of the base through llama.cpp on ``threads`` threads, the second with prompt lookup as HF's:
    `LlamaCppMethod`). Every method but hamburger
    and verify_fold runs ``reference`` (the unchanged base, default ``model``; verify puts ``model``'s grafted modules
    on it). Both verify methods draft as the CLI does: by prompt lookup (`lookup.LOOKUP_TOKENS`) and over the
    checkpoint's draft vocabulary when it has one. Early exit defaults to a quarter of the base's depth.

    With ``compile_backend`` (the GPU mode) HAMburger, our own loop and HF `generate` decode on a static
    cache with their per-step forward compiled by that `torch.compile` backend (CUDA graphs on a GPU), and
    with ``micro_loop="device"`` the micro loop too; prompt lookup, early exit and assisted stay as HF runs them
    (assisted generation has no static-cache path). ``micro_loop`` picks HAMburger's micro loop (host, device)."""
    reference = reference or model
    base = reference.base
    static = compile_backend is not None
    if static:
        mode = "reduce-overhead" if model.device.type == "cuda" else None
        for m in dict.fromkeys([model, reference]):
            m.compile_decoding(mode=mode, backend=compile_backend)
            if micro_loop == "device":
                compile_micro_loop(m, mode=mode, backend=compile_backend)
    hf_extra = compiled_hf_kwargs(base.device, compile_backend) if static else {}
    methods = []
    for name in names:
        if name == "hamburger":
            methods += [HamburgerMethod(model, tokenizer, c, static_cache=static, micro_loop=micro_loop)
                        for c in confidences]
        elif name == "own_loop":
            methods.append(HamburgerMethod(reference, tokenizer, 1.0, name="own_loop", static_cache=static,
                                           micro_loop=micro_loop))
        elif name == "hf_generate":
            methods.append(HFMethod(base, tokenizer, **hf_extra))
        elif name == "prompt_lookup":
            methods.append(HFMethod(base, tokenizer, "prompt_lookup", prompt_lookup_num_tokens=prompt_lookup))
        elif name == "early_exit":
            layer = early_exit_layer or max(1, len(base_decoder_stack(base).layers) // 4)
            methods.append(HFMethod(base, tokenizer, f"early_exit@{layer}", assistant_early_exit=layer))
        elif name == "assisted":
            if assistant is None:
                raise ValueError("the assisted method needs an assistant model")
            methods.append(HFMethod(base, tokenizer, "assisted", **assisted_kwargs(base, tokenizer, *assistant)))
        elif name in LLAMA_CPP_METHODS:
            if gguf is None:
                raise ValueError("the llama_cpp methods need the base as a GGUF file")
            methods.append(LlamaCppMethod(gguf, threads, _as_list(base.generation_config.eos_token_id),
                                          kv_slot_bytes(base.config),
                                          lookup=prompt_lookup if name == "llama_cpp_lookup" else 0))
        elif name == "verify":
            from hamburger.engine.verify import on_base

            methods.append(VerifyMethod(on_base(model, reference), tokenizer, draft_vocab=model.draft_vocab,
                                        lookup=PromptLookup(), ngrams=model.draft_ngrams))
        elif name == "verify_fold":
            from hamburger.engine.folding import parse_folding

            methods += [VerifyMethod((fold_models or {}).get(spec, model), tokenizer, name=f"verify_fold@{spec}",
                                     fold=parse_folding(spec), draft_vocab=model.draft_vocab, lookup=PromptLookup(),
                                     ngrams=model.draft_ngrams) for spec in folds or [VERIFY_FOLD]]
        else:
            raise ValueError(name)
    return methods


LLAMA_CPP_METHODS = ("llama_cpp", "llama_cpp_lookup")
METHOD_NAMES = ("hamburger", "own_loop", "hf_generate", "prompt_lookup", "early_exit", "assisted", *LLAMA_CPP_METHODS,
                "verify", "verify_fold")
# (assisted runs where an assistant is given, llama.cpp's where asked for: they need a package built from C++)
DEFAULT_METHODS = tuple(m for m in METHOD_NAMES if m not in ("assisted", *LLAMA_CPP_METHODS))
VERIFY_FOLD = DEFAULT_FOLD  # the folding the verify_fold method times unless told others (`--folds`)
