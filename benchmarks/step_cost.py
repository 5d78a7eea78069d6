"""Cost of one HAMburger macro step emitting k = 1..max tokens vs one plain base decode step.

A macro step = merge the previous group (embedder) + one base forward on one new KV slot + the micro
loop (LM head and stop head per token, the micro-step decoder per extra token). The pieces of the micro
loop are also timed one by one (`micro_step_components_ms`), which says what one more token costs. The grafted modules'
weights do not change the cost, so an untrained graft on the real base is timed, with the stop head
forced to continue so that every group has exactly k tokens.

    python benchmarks/step_cost.py --threads 2 --out benchmarks/results/step_cost.json
    python benchmarks/step_cost.py --device cuda --shape llama-3.2-1b --out ...   # random weights, GPU

`--shape` builds a base of that architecture with random weights instead of loading the bundled one (cost
depends on shapes, not values; the record says so). On CUDA every timing ends with a synchronize.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from hamburger.core.base import load_base
from hamburger.core.config import HamburgerConfig
from hamburger.engine.generate import Generation
from hamburger.engine.prompt import encode_prompt
from hamburger.core.model import HamburgerModel
from hamburger.engine.sampling import DecodingConfig

from hamburger.bench.machine import machine_info

PROMPT = "Explain in a few paragraphs how a bicycle works, part by part."
SHAPES = {  # published architecture sizes of Llama-family models (random weights: for cost only)
    "smollm2-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True),
    "llama-3.2-1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True),
}


class NullTokenizer:
    """What the engine needs of a tokenizer when the ids mean nothing (random weights)."""

    eos_token_id = None
    pad_token_id = 0

    def decode(self, ids, **kwargs) -> str:
        return ""


def random_base(shape: str, dtype: str, device: str):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**SHAPES[shape], max_position_embeddings=4096, eos_token_id=None, bos_token_id=None)
    torch.manual_seed(0)
    return LlamaForCausalLM(config).to(device=device, dtype=getattr(torch, dtype)).eval()


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def step_gaps(model, tokenizer, ids, k: int, new_tokens: int) -> list[float]:
    """Seconds between consecutive groups (= one macro step each), with groups forced to k tokens."""
    model.config.max_steps = k
    confidence = 1.0 if k == 1 else 0.5
    run = Generation(model, tokenizer, [ids], DecodingConfig(max_new_tokens=new_tokens, confidence=confidence,
                                                               ignore_eos=True))
    gaps, last = [], None
    for event in run:
        now = time.perf_counter()
        if last is not None and len(event.token_ids) == k and event.finish_reason is None:
            gaps.append(now - last)
        last = now
    return gaps


def plain_step_times(base, ids, context: int, reps: int) -> list[float]:
    """One ordinary decode step (1 token, cache of `context` entries, LM head included)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=base.config)
    with torch.inference_mode():
        base(input_ids=torch.tensor([ids[:context]], device=base.device), past_key_values=cache, use_cache=True)
        times = []
        tok = torch.tensor([[ids[0]]], device=base.device)
        for i in range(reps):
            sync(base.device)
            start = time.perf_counter()
            logits = base(input_ids=tok, past_key_values=cache, use_cache=True).logits
            logits.argmax(-1).tolist()  # the token reaches the host, as in any decoding loop
            times.append(time.perf_counter() - start)
            cache.crop(-1)
    return times


def component_times(model, reps: int = 60, batch: int = 1) -> dict[str, float]:
    """Median ms of each piece of the micro loop for ``batch`` rows: what one more token in a group costs."""
    from transformers import DynamicCache

    from hamburger.engine.sampling import choose_tokens

    d, m, device = model.config.hidden_size, model.config.num_features, model.device
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(batch, d, generator=g).to(device=device, dtype=model.dtype)
    features = torch.randn(batch, m, d, generator=g).to(device=device, dtype=model.dtype)
    group = torch.randint(3, 1000, (batch, model.config.max_steps), generator=g).to(device)
    cfg = DecodingConfig()

    def timed(fn) -> float:
        times = []
        for _ in range(reps):
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            times.append(time.perf_counter() - start)
        return 1000 * statistics.median(times)

    with torch.inference_mode():
        logits = model.decode_logits(hidden).float()
        token = logits.argmax(-1)
        emb = model.embed(token)
        cache = DynamicCache()
        model.decoder(torch.cat([features, emb[:, None]], 1), cache, 0)

        def msd_step():
            model.decoder(emb[:, None], cache, m + 1)
            cache.crop(-1)

        times = {
            "lm_head": timed(lambda: model.decode_logits(hidden)),
            "choose_token_and_prob": timed(lambda: (choose_tokens(logits, [cfg] * batch, [None] * batch),
                                                    logits.softmax(-1).gather(1, token[:, None]).tolist())),
            "stop_head": timed(lambda: model.stop_head(hidden, emb).float().tolist()),
            "msd_step": timed(msd_step),
            "embedder_group": timed(lambda: model.embedder(model.embed(group), torch.full(
                (batch,), group.shape[1], device=device))),
        }
        if device.type == "cpu" and batch == 1:  # what an int8 copy of the LM head would cost (not used by the engine yet)
            head = model.base.get_output_embeddings()
            linear = torch.nn.Linear(head.in_features, head.out_features, bias=False)
            linear.weight.data = head.weight.detach().float().clone()
            int8 = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(linear), {torch.nn.Linear},
                                                          dtype=torch.qint8)
            times["lm_head_int8_dynamic"] = timed(lambda: int8(hidden.float()))
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--decoder-layers", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shape", choices=sorted(SHAPES), default=None,
                        help="time a random-weight base of this architecture instead of the bundled model")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--out", default="benchmarks/results/step_cost.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.shape:
        base, tokenizer = random_base(args.shape, args.dtype, args.device), NullTokenizer()
        spec, note = args.shape, f"{args.shape} architecture with RANDOM weights (cost only)"
    else:
        base, tokenizer, info = load_base(None, args.dtype)
        base = base.to(args.device)
        spec, note = info.spec, "SmolLM2-135M-Instruct with Q4_1-rounded weights, dequantized"
    model = HamburgerModel(base, HamburgerConfig(max_steps=4, decoder_layers=args.decoder_layers)).eval()
    model.to(args.device)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-100.0)  # always continue: groups of exactly max_steps
    ids = (encode_prompt(tokenizer, PROMPT) if not args.shape
           else torch.randint(3, base.config.vocab_size, (44,), generator=torch.Generator().manual_seed(0)).tolist())
    step_gaps(model, tokenizer, ids, 2, 16)  # warm-up
    results = {"plain_base_step_ms": None, "macro_step_ms": {}}
    plain = []
    for _ in range(args.repeats):
        plain += plain_step_times(base, ids * 4, len(ids) + 32, 40)
    results["plain_base_step_ms"] = {"median": 1000 * statistics.median(plain),
                                     "p10": 1000 * sorted(plain)[len(plain) // 10],
                                     "p90": 1000 * sorted(plain)[9 * len(plain) // 10]}
    for k in range(1, 5):
        gaps = []
        for _ in range(args.repeats):
            gaps += step_gaps(model, tokenizer, ids, k, args.new_tokens)
        med = 1000 * statistics.median(gaps)
        results["macro_step_ms"][k] = {"median": med, "p10": 1000 * sorted(gaps)[len(gaps) // 10],
                                       "p90": 1000 * sorted(gaps)[9 * len(gaps) // 10], "n": len(gaps),
                                       "ms_per_token": med / k}
    model.config.max_steps = 4
    results["micro_step_components_ms"] = component_times(model)
    machine = machine_info(args.threads, args.dtype)
    if torch.device(args.device).type == "cuda":
        machine["gpu"] = torch.cuda.get_device_name()
    record = {"benchmark": "step_cost", "base": spec, "base_note": note, "device": args.device,
              "decoder_layers": args.decoder_layers, "prompt_tokens": len(ids), "machine": machine, "results": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
