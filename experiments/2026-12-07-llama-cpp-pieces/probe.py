"""What a llama.cpp backend for the paper's decoding would need of llama.cpp, checked on the bundled base.

A HAMburger step feeds the base one merged vector (the compositional embedder's output, not a token), and the micro-step
decoder then reads the base's final normed state and the outputs of a few layers (the checkpoint's `tap_layers`). This
probe asks llama.cpp (llama-cpp-python's C API) for each piece and compares it with transformers on the same Q4_1
weights (dequantized), then times a one-position step each way:

1. an input vector instead of a token id (`llama_batch.embd`): the logits after it, against the token's own logits;
2. the final normed states (`embeddings`, no pooling) and the tapped layers' outputs (`l_out-N`, read through the
   context's eval callback, `cb_eval`), against transformers' hidden states (cosine similarity, worst over positions);
3. the checkpoint's LoRA adapters (they act at merged slots only) written as a llama.cpp LoRA GGUF (`lora_gguf`) and
   set on the context: the final states with them, against the model's own with its adapters acting everywhere;
4. median ms of a one-position step on a cache of ``--cache`` slots: a token with its logits (what plain llama.cpp
   decoding runs), then with its final state and taps read out too, then a vector in its place, then with the
   checkpoint's adapters set for the step and cleared after it.

The callback reads ggml's tensor struct through ctypes (`GgmlTensor`, the layout of the ggml that llama-cpp-python
0.3.36 bundles; another version may differ: the probe checks the names and shapes it reads). Run it on an otherwise
idle machine (llama.cpp's threads spin at their barriers).

    python experiments/2026-12-07-llama-cpp-pieces/probe.py --out experiments/2026-12-07-llama-cpp-pieces/probe.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.forward_positions import timings  # noqa: E402  (after one untimed call, as there)


class GgmlTensor(ctypes.Structure):
    """ggml's `struct ggml_tensor` (GGML_MAX_DIMS 4, GGML_MAX_OP_PARAMS 64 bytes, GGML_MAX_SRC 10, GGML_MAX_NAME 64)."""

    _fields_ = [("type", ctypes.c_int), ("buffer", ctypes.c_void_p), ("ne", ctypes.c_int64 * 4),
                ("nb", ctypes.c_size_t * 4), ("op", ctypes.c_int), ("op_params", ctypes.c_int32 * 16),
                ("flags", ctypes.c_int32), ("src", ctypes.c_void_p * 10), ("view_src", ctypes.c_void_p),
                ("view_offs", ctypes.c_size_t), ("data", ctypes.c_void_p), ("name", ctypes.c_char * 64),
                ("extra", ctypes.c_void_p), ("padding", ctypes.c_char * 8)]


GGML_TYPE_F32 = 0


class Session:
    """One llama.cpp context on the GGUF with final states on, an eval callback that copies the wanted tensors."""

    def __init__(self, llama_cpp, model, n_ctx: int, threads: int, wanted: set[str]):
        self.lib, self.wanted, self.read = llama_cpp, {w.encode() for w in wanted}, {}

        @llama_cpp.ggml_backend_sched_eval_callback
        def callback(pointer, ask, _user):
            tensor = ctypes.cast(pointer, ctypes.POINTER(GgmlTensor)).contents
            if ask:
                return tensor.name in self.wanted
            if tensor.name in self.wanted and tensor.type == GGML_TYPE_F32 and tensor.data:
                rows, width = tensor.ne[1], tensor.ne[0]
                values = ctypes.cast(tensor.data, ctypes.POINTER(ctypes.c_float))
                self.read[tensor.name.decode()] = np.ctypeslib.as_array(values, shape=(rows, width)).copy()
            return True

        self.callback = callback  # (kept alive as long as the context)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = params.n_batch = n_ctx
        params.n_threads = params.n_threads_batch = threads
        params.embeddings = True
        params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_NONE
        if wanted:
            params.cb_eval = callback
        self.ctx = llama_cpp.llama_init_from_model(model, params)
        self.memory = llama_cpp.llama_get_memory(self.ctx)

    def decode(self, start: int, tokens: list[int] | None = None, vectors: np.ndarray | None = None) -> None:
        """Positions start.. get ``tokens`` or ``vectors`` [n, d] (float32), each with its logits and final state."""
        lib = self.lib
        n = len(tokens) if tokens is not None else vectors.shape[0]
        batch = lib.llama_batch_init(n, 0 if tokens is not None else vectors.shape[1], 1)
        try:
            batch.n_tokens = n
            if tokens is not None:
                for i, t in enumerate(tokens):
                    batch.token[i] = t
            else:
                ctypes.memmove(batch.embd, np.ascontiguousarray(vectors, dtype=np.float32).ctypes.data, vectors.nbytes)
            for i in range(n):
                batch.pos[i], batch.n_seq_id[i], batch.logits[i] = start + i, 1, 1
                batch.seq_id[i][0] = 0
            if lib.llama_decode(self.ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
        finally:
            lib.llama_batch_free(batch)

    def logits(self, i: int, vocab: int) -> np.ndarray:
        return np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx, i), shape=(vocab,)).copy()

    def final(self, i: int, width: int) -> np.ndarray:
        return np.ctypeslib.as_array(self.lib.llama_get_embeddings_ith(self.ctx, i), shape=(width,)).copy()

    def cut(self, keep: int) -> None:
        self.lib.llama_memory_seq_rm(self.memory, -1, keep, -1)


GGUF_NAMES = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
              "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


def rotary_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """A query or key projection's output rows in the order llama.cpp's Llama GGUF keeps them (its converter's
    permutation: each head's two rotary halves interleaved)."""
    return weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(
        weight.shape)


def lora_gguf(lora_file: Path, alpha: float, config, out: Path, permute: bool = True) -> int:
    """The checkpoint's LoRA adapters (`lora.safetensors`, HF names, A [r, in], B [out, r]) as a llama.cpp LoRA GGUF
    (`blk.N.NAME.weight.lora_a` / `lora_b`, B's query and key rows permuted as the base's GGUF holds them, unless not
    ``permute``: the check that the permutation matters). Returns the count of adapted projections."""
    from gguf import GGUFWriter
    from safetensors.torch import load_file

    tensors = load_file(str(lora_file))
    writer = GGUFWriter(str(out), "llama")
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", alpha)
    count = 0
    for key in sorted(tensors):
        if not key.endswith(".lora_A"):
            continue
        stem = key.removesuffix(".lora_A")
        layer, projection = int(stem.split(".")[2]), stem.split(".")[-1]
        a_, b_ = (tensors[k].float().numpy() for k in (key, stem + ".lora_B"))  # (stored in bf16)
        if projection == "q_proj" and permute:
            b_ = rotary_rows(b_, config.num_attention_heads)
        elif projection == "k_proj" and permute:
            b_ = rotary_rows(b_, config.num_key_value_heads)
        name = f"blk.{layer}.{GGUF_NAMES[projection]}.weight"
        writer.add_tensor(name + ".lora_a", a_)
        writer.add_tensor(name + ".lora_b", b_)
        count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return count


def worst_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(((a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)).min())


def median_ms(fn, reps: int) -> float:
    return 1000 * statistics.median(timings(fn, reps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="experiments/2026-12-07-llama-cpp-pieces/probe.json")
    parser.add_argument("--cache", type=int, default=200, help="slots in the cache before the timed step")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import hamburger  # noqa: F401  (its MKL setting, before torch loads)
    import llama_cpp
    import torch
    from llama_cpp import Llama

    from hamburger.bench.machine import machine_info
    from hamburger.core.base import DEFAULT_BASE, bundled_gguf_path, load_base
    from hamburger.core.loading import load_model
    from hamburger.engine.prompt import encode_prompt

    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_model(None)
    base = model.base
    taps, width, vocab = list(model.config.tap_layers), base.config.hidden_size, base.config.vocab_size
    names = {f"l_out-{i}" for i in taps}
    gguf = bundled_gguf_path(DEFAULT_BASE)
    weights = Llama(model_path=str(gguf), n_ctx=64, verbose=False)  # (its model; the contexts are made below)
    session = Session(llama_cpp, weights._model.model, 512, args.threads, names)

    # 1-2: the pieces, on a prompt (its last token also given as its embedding vector)
    prompt = encode_prompt(tokenizer, "Explain in a few paragraphs how a bicycle works, part by part.")
    with torch.inference_mode():
        hf = load_base(None)[0](input_ids=torch.tensor([prompt]), output_hidden_states=True)
    session.decode(0, tokens=prompt)
    n = len(prompt)
    tapped = {name: session.read[name] for name in sorted(names)}
    assert all(v.shape == (n, width) for v in tapped.values()), {k: v.shape for k, v in tapped.items()}
    final = np.stack([session.final(i, width) for i in range(n)])
    by_token = session.logits(n - 1, vocab)
    session.cut(n - 1)
    vector = base.get_input_embeddings().weight[prompt[-1]].detach().float().numpy()[None]
    session.decode(n - 1, vectors=vector)
    by_vector = session.logits(0, vocab)
    record = {
        "vector_input": {"logits_max_abs_difference": float(np.abs(by_vector - by_token).max()),
                         "same_argmax": bool(by_vector.argmax() == by_token.argmax()),
                         "logits_max_abs": float(np.abs(by_token).max())},
        "final_state_worst_cosine_vs_transformers": worst_cosine(final, hf.hidden_states[-1][0].numpy()),
        "taps_worst_cosine_vs_transformers": {
            str(i): worst_cosine(tapped[f"l_out-{i}"], hf.hidden_states[i + 1][0].numpy()) for i in taps},
        "prompt_tokens": n, "tap_layers": taps,
    }

    # 3: the adapters, which act at merged slots only: llama.cpp sets adapters per context and decode call, and a
    # step forwards one slot, so setting them for a merged slot's step and clearing them after gates them as the
    # checkpoint does. Their final states on the prompt, with adapters everywhere, against the model's own.
    import shutil
    import tempfile

    from hamburger.core.loading import default_model
    from hamburger.engine.cache import SlotCache

    spec = json.loads((Path(default_model()) / "hamburger_config.json").read_text())["lora"]
    folder = Path(tempfile.mkdtemp())
    adapted = lora_gguf(Path(default_model()) / spec["file"], spec["alpha"], base.config, folder / "lora.gguf")
    lora_gguf(Path(default_model()) / spec["file"], spec["alpha"], base.config, folder / "unpermuted.gguf", False)
    scales = (ctypes.c_float * 1)(1.0)
    adapters, unpermuted = ((llama_cpp.llama_adapter_lora_p_ctypes * 1)(llama_cpp.llama_adapter_lora_init(
        weights._model.model, str(folder / name).encode())) for name in ("lora.gguf", "unpermuted.gguf"))
    shutil.rmtree(folder)  # (llama.cpp holds the adapters in memory)

    def torch_final(merged: bool) -> np.ndarray:
        cache = SlotCache(base.config, 1, model.device)
        ids = torch.tensor([prompt])
        positions = torch.arange(n)[None]
        mask = cache.extend(torch.ones_like(ids, dtype=torch.bool), positions)
        with torch.inference_mode():
            return model.base_forward(model.embed(ids), positions, mask, cache.kv,
                                      merged_slots=torch.full_like(ids, merged, dtype=torch.bool))[0][0].numpy()

    def llama_final(adapter=None) -> np.ndarray:
        session.cut(0)
        assert llama_cpp.llama_set_adapters_lora(session.ctx, adapter, int(adapter is not None),
                                                 scales if adapter is not None else None) == 0
        session.decode(0, tokens=prompt)
        return np.stack([session.final(i, width) for i in range(n)])

    adapted_torch, plain_torch = torch_final(True), torch_final(False)
    adapted_llama, unpermuted_llama, plain_llama = llama_final(adapters), llama_final(unpermuted), llama_final()
    record["lora"] = {
        "projections": adapted, "rank": spec["r"], "alpha": spec["alpha"],
        "worst_cosine_adapted_llama_vs_adapted_model": worst_cosine(adapted_llama, adapted_torch),
        "worst_cosine_adapted_llama_vs_unadapted_model": worst_cosine(adapted_llama, plain_torch),
        "worst_cosine_adapted_llama_without_rotary_permutation_vs_adapted_model": worst_cosine(unpermuted_llama,
                                                                                              adapted_torch),
        "worst_cosine_unadapted_llama_vs_unadapted_model": worst_cosine(plain_llama, plain_torch),
        "worst_cosine_adapted_model_vs_unadapted_model": worst_cosine(adapted_torch, plain_torch),
    }

    # 4: one-position steps on a cache of --cache slots
    context = (prompt * (args.cache // n + 1))[:args.cache]
    plain = Session(llama_cpp, weights._model.model, args.cache + 8, args.threads, set())
    plain.decode(0, tokens=context)
    session.cut(0)
    session.decode(0, tokens=context)

    def token_step():
        plain.decode(args.cache, tokens=[prompt[-1]])
        plain.logits(0, vocab).argmax()
        plain.cut(args.cache)

    def tapped_step(**given):
        session.read.clear()
        session.decode(args.cache, **given)
        session.logits(0, vocab).argmax()
        session.final(0, width)
        assert len(session.read) == len(names)
        session.cut(args.cache)

    def switched_step():  # (a merged slot's step: its adapters set, and cleared after it)
        llama_cpp.llama_set_adapters_lora(session.ctx, adapters, 1, scales)
        tapped_step(vectors=vector)
        llama_cpp.llama_set_adapters_lora(session.ctx, None, 0, None)

    record["step_ms"] = {
        "token_with_logits": median_ms(token_step, args.reps),
        "token_with_logits_final_state_and_taps": median_ms(lambda: tapped_step(tokens=[prompt[-1]]), args.reps),
        "vector_with_logits_final_state_and_taps": median_ms(lambda: tapped_step(vectors=vector), args.reps),
        "vector_with_adapters_set_and_cleared": median_ms(switched_step, args.reps)}
    record.update(cache_slots=args.cache, reps=args.reps, gguf=gguf.name, llama_cpp_python=llama_cpp.__version__,
                  machine=machine_info(args.threads, "llama.cpp: Q4_1 GGUF; transformers: float32"))
    out = Path(args.out)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "machine"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
