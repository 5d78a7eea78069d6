"""Cost of one base forward over k = 1..K new positions, on torch (HF's and HAMburger's, fp32 and bf16) and llama.cpp.

A verify step (the verify modes, prompt lookup, any draft-and-check decoding) is one forward of the base over the
pending token and its drafts, with logits for every position; it pays off where a forward over k positions costs about
what one costs. This times exactly that on the bundled base: a cache of ``--cache`` slots, then a forward of k new
tokens, the logits of all k positions, their argmax on the host, the cache cut back; the median of ``--rounds`` x
``--reps`` per k and backend, every k and backend in each round. llama.cpp (llama-cpp-python, built by
``benchmarks/install_llama_cpp.sh``) runs the base's own Q4_1 GGUF file with logits for every position; torch runs the
same weights dequantized, through transformers' forward (what HF `generate` runs) or the default model's own
(`HamburgerModel.base_forward`, the lean pass, as its verify step runs it). Values do not change the cost, so the
tokens are the bench prompt's, repeated. llama.cpp's threads spin at their barriers: run it on an otherwise idle
machine, and apart from torch's backends (torch's OpenMP threads spin on after a forward):
`benchmarks/forward_positions.sh`.

    python -m benchmarks.forward_positions --out benchmarks/results/forward-positions/forward_positions.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

PROMPT = "Explain in a few paragraphs how a bicycle works, part by part."


def timings(fn, reps: int) -> list[float]:
    """Seconds of ``reps`` calls of ``fn``, after one untimed call."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


class TorchForward:
    """An HF causal LM on a DynamicCache of the context; ``step(tokens)`` forwards them and cuts the cache back."""

    def __init__(self, base, context: list[int]):
        import torch
        from transformers import DynamicCache

        self.torch, self.base = torch, base
        self.cache = DynamicCache(config=self.base.config)
        with torch.inference_mode():
            self.base(input_ids=torch.tensor([context]), past_key_values=self.cache, use_cache=True)
        self.slots = len(context)

    def step(self, tokens: list[int]) -> list[int]:
        with self.torch.inference_mode():
            logits = self.base(input_ids=self.torch.tensor([tokens]), past_key_values=self.cache, use_cache=True).logits
            chosen = logits[0].argmax(-1).tolist()
        self.cache.crop(-len(tokens))
        return chosen


class EngineForward:
    """A HAMburger model's own forward of its base, as its verify step runs it (the lean pass where the family has one,
    the LM head's layout for a few rows; no merged slot, so no adapter acts): ``step(tokens)`` forwards them and drops
    their slots again."""

    def __init__(self, model, context: list[int]):
        import torch

        from hamburger.engine.cache import SlotCache
        from hamburger.engine.verify import SMALL_HEAD_ROWS

        self.torch, self.model, self.head_rows = torch, model, SMALL_HEAD_ROWS
        self.cache = SlotCache(model.base.config, 1, model.device)
        self.slots = len(context)
        self._forward(context, 0)

    def _forward(self, tokens: list[int], start: int):
        torch, model = self.torch, self.model
        ids = torch.tensor([tokens], device=model.device)
        positions = torch.arange(start, start + len(tokens), device=model.device)[None]
        mask = self.cache.extend(torch.ones_like(ids, dtype=torch.bool), positions)
        return model.base_forward(model.embed(ids), positions, mask, self.cache.kv)[0]

    def step(self, tokens: list[int]) -> list[int]:
        with self.torch.inference_mode():
            final = self._forward(tokens, self.slots)
            chosen = self.model.decode_logits(final[0], max_rows=self.head_rows).argmax(-1).tolist()
        self.cache.drop_last(len(tokens))
        return chosen


class LlamaCppForward:
    """llama.cpp on the bundled GGUF; ``step(tokens)`` evaluates them and cuts the cache back. With ``all_logits``
    False only the last position's logits are computed (a plain decode step's layout: what the body alone costs)."""

    def __init__(self, threads: int, context: list[int], all_logits: bool = True):
        from llama_cpp import Llama

        from hamburger.core.base import DEFAULT_BASE, bundled_gguf_path

        self.gguf = bundled_gguf_path(DEFAULT_BASE)
        self.llm = Llama(model_path=str(self.gguf), n_ctx=len(context) + 64, n_batch=len(context) + 64,
                         n_threads=threads, n_threads_batch=threads, logits_all=all_logits, verbose=False)
        self.llm.eval(context)
        self.slots, self.all_logits = len(context), all_logits

    def step(self, tokens: list[int]) -> list[int]:
        self.llm.eval(tokens)  # (evaluating drops what the cache holds past n_tokens first)
        if self.all_logits:
            chosen = self.llm.scores[self.slots:self.slots + len(tokens)].argmax(-1).tolist()
        else:
            chosen = [int(np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),)).argmax())]
        self.llm.n_tokens = self.slots
        return chosen


def main() -> int:
    import hamburger  # noqa: F401  (its MKL setting, before torch loads)

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="benchmarks/results/forward-positions/forward_positions.json")
    parser.add_argument("--cache", type=int, default=200, help="slots in the cache before the timed forward")
    parser.add_argument("--max-positions", type=int, default=8, help="time k = 1 .. this many new positions")
    parser.add_argument("--rounds", type=int, default=5, help="passes over every k and backend")
    parser.add_argument("--reps", type=int, default=10,
                        help="timed forwards per k and backend in each round (the median of all rounds' is kept)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backends", default="torch-float32,torch-bfloat16,llama_cpp",
                        help="comma-separated: torch-DTYPE (HF's forward of the dequantized base), hamburger-DTYPE "
                             "(the default model's own forward of it, as its verify step runs it), llama_cpp (the "
                             "GGUF, logits of every position) and llama_cpp_last_logits (the last position's only)")
    args = parser.parse_args()
    if args.rounds < 1 or args.reps < 1 or args.rounds * args.reps < 2 or args.max_positions < 1:
        parser.error("time at least two forwards per k (--rounds x --reps) and at least one position")

    import torch

    from hamburger.bench.machine import machine_info
    from hamburger.core.base import DEFAULT_BASE, load_base
    from hamburger.core.loading import load_model
    from hamburger.engine.prompt import encode_prompt

    torch.set_num_threads(args.threads)
    _, tokenizer, _ = load_base(None, "float32")
    prompt = encode_prompt(tokenizer, PROMPT)
    context = (prompt * (args.cache // len(prompt) + 1))[:args.cache]
    backends = {}
    for name in args.backends.split(","):
        if name in ("llama_cpp", "llama_cpp_last_logits"):
            backends[name] = LlamaCppForward(args.threads, context, all_logits=name == "llama_cpp")
        elif name.startswith("torch-"):
            backends[name] = TorchForward(load_base(None, name.removeprefix("torch-"))[0], context)
        elif name.startswith("hamburger-"):
            backends[name] = EngineForward(load_model(None, name.removeprefix("hamburger-"))[0].eval(), context)
        else:
            parser.error(f"unknown backend {name!r}: torch-DTYPE, hamburger-DTYPE, llama_cpp or llama_cpp_last_logits")
    times: dict[str, dict[int, list[float]]] = {name: {k: [] for k in range(1, args.max_positions + 1)}
                                                for name in backends}
    for round_ in range(args.rounds):  # (every k and backend in each round: a drifting machine load is shared)
        for k in range(1, args.max_positions + 1):
            for name, backend in backends.items():
                times[name][k] += timings(lambda: backend.step(prompt[:k]), args.reps)
        print(f"round {round_ + 1}/{args.rounds}: " + "  ".join(
            f"{name} k=1 {1000 * statistics.median(times[name][1]):.1f} ms" for name in backends), flush=True)
    ms = {name: {k: 1000 * statistics.median(t) for k, t in by_k.items()} for name, by_k in times.items()}
    for k in range(1, args.max_positions + 1):
        print(f"k={k}: " + "  ".join(f"{name} {ms[name][k]:.1f} ms" for name in backends))
    record = {
        "what": "median ms of one base forward of k new positions on a cache, the argmax of the logits of all k "
                "(llama_cpp_last_logits: of the last) on the host",
        "base": DEFAULT_BASE, "cache_slots": args.cache, "rounds": args.rounds, "reps_per_round": args.reps,
        "ms": ms, "ms_quartiles": {name: {k: [1000 * q for q in statistics.quantiles(t, n=4)[::2]]
                                           for k, t in by_k.items()} for name, by_k in times.items()},
        "relative_to_one_position": {n: {k: v / t[1] for k, v in t.items()} for n, t in ms.items()},
        "machine": machine_info(args.threads, ", ".join(  # (the dtype of each backend)
            name.split("-", 1)[1] if "-" in name else f"{name}: Q4_1 GGUF" for name in backends)),
    }
    gguf = next((b.gguf.name for b in backends.values() if isinstance(b, LlamaCppForward)), None)
    if gguf:
        import llama_cpp

        record["llama_cpp"] = {"package": llama_cpp.__version__, "gguf": gguf}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
