"""What session 75's serving additions cost or save on the default model (fp32, 2 threads, the draw paused):

1. `n` answers share the prompt's reading: the time to the first group (`prefill_s`, which includes the first group) of
   4 rows with one prompt, against 4 rows whose prompts differ only in their first token (what the engine read for 4
   answers before: 4 prompts of that length). Whole (a 120-token prompt) and chunked (a 600-token prompt, the server's
   256-token chunks). Alternated, median of 5 runs each.
2. Penalties: ms per decoded token of 128 tokens (`ignore_eos`) with `repetition_penalty` 1.1, `frequency_penalty` 0.5
   and 3 biased tokens, against none, in lossless verify mode (the server's default) and in hamburger mode at knob 1.0,
   batch 1. Alternated, median of 3 runs each.

    python experiments/2026-12-06-serving-extras/cost.py > experiments/2026-12-06-serving-extras/cost.json
"""

import json
import statistics

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine.generate import Generation
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base

ROWS = 4


def long_prompt(tokenizer, tokens: int) -> list[int]:
    """A chat prompt of exactly ``tokens`` tokens: dev summarisation texts, one after another, cut."""
    text = " ".join(p["prompt"] for p in category_prompts("summarisation", 8))
    ids = encode_prompt(tokenizer, [{"role": "user", "content": text}])
    assert len(ids) >= tokens, len(ids)
    return ids[:tokens]


def alternate(runs: dict, reps: int) -> dict:
    """Each of ``runs`` (name -> callable returning seconds) ``reps`` times, alternated: the medians, in ms."""
    times = {k: [] for k in runs}
    for _ in range(reps):
        for name, run in runs.items():
            times[name].append(run())
    return {k: round(1000 * statistics.median(v), 1) for k, v in times.items()}


def prefill(model, tokenizer, prompts: list[list[int]], chunk: int | None) -> float:
    cfg = DecodingConfig(max_new_tokens=1, confidence=1.0)
    results = Generation(model, tokenizer, prompts, [cfg] * len(prompts), prefill_chunk=chunk).run()
    return max(r.prefill_s for r in results)


def per_token(engine, model, tokenizer, prompt: list[int], penalized: bool) -> float:
    extra = dict(repetition_penalty=1.1, frequency_penalty=0.5, logit_bias={13: -5.0, 30: 2.0, 198: -1.0}) \
        if penalized else {}
    cfg = DecodingConfig(max_new_tokens=128, confidence=1.0 if engine is Generation else None, ignore_eos=True,
                         **extra)
    result = engine(model, tokenizer, [prompt], [cfg]).run()[0]
    return result.decode_s / (result.tokens - result.groups[0])


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, "float32", reference=True)
    verifier = on_base(model, reference)
    out = {"machine": machine_info(2, "float32"), "rows": ROWS}
    for name, tokens, chunk in (("whole", 120, None), ("chunked", 600, 256)):
        ids = long_prompt(tokenizer, tokens)
        distinct = [[t] + ids[1:] for t in (ids[0], 200, 201, 202)]  # (one token differs: no reading is shared)
        out[f"prefill_{name}_ms"] = {"prompt_tokens": tokens, "prefill_chunk": chunk, **alternate({
            "one_prompt": lambda: prefill(model, tokenizer, [ids] * ROWS, chunk),
            "distinct_prompts": lambda: prefill(model, tokenizer, distinct, chunk)}, 5)}
    prompt = encode_prompt(tokenizer, [{"role": "user", "content": category_prompts("chat", 1)[0]["prompt"]}])
    for name, engine, m in (("verify", VerifyGeneration, verifier), ("hamburger_knob_1", Generation, model)):
        out[f"ms_per_token_{name}"] = alternate({
            "none": lambda: per_token(engine, m, tokenizer, prompt, False),
            "penalties": lambda: per_token(engine, m, tokenizer, prompt, True)}, 3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
