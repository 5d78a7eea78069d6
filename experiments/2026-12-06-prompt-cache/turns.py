"""What a prompt cache saves on the default model (fp32, 2 threads, the draw paused), in lossless verify mode (the
server's default; the prompt's reading is the same in every mode):

1. A conversation: 8 user turns, each a dev chat prompt, each reply the engine's own (up to 64 tokens). Every turn's
   prompt is the whole conversation so far. It is held without a cache and with one kept across its turns (as the
   server's or `hamburger chat`'s is: it keeps each prompt, and in lossless verify mode each prompt with its reply),
   alternated, 5 times each: each turn's TTFT (`prefill_s`: the prompt's reading and the first token), median, and
   whether every reply was the same token for token.
3. A shared system prompt: a system message of about 600 tokens (dev summarisation texts), then 4 other dev chat
   questions, each a conversation of its own; TTFT without a cache and with one that read the first question's prompt.

    python experiments/2026-12-06-prompt-cache/turns.py > experiments/2026-12-06-prompt-cache/turns.json
"""

import json
import statistics

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.prompt_cache import PromptCache
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base

TURNS, REPLY, REPS, QUESTIONS = 8, 64, 5, 4  # (3 questions after the one that fills the store)
CONTEXT_CHARS = 2400  # the system prompt's context: about 600 tokens
STORE = 256 * 2 ** 20  # `serve`'s and `chat`'s default


def run(model, tokenizer, prompt: list[int], tokens: int, store: PromptCache | None):
    cfg = DecodingConfig(max_new_tokens=tokens)
    return VerifyGeneration(model, tokenizer, [prompt], [cfg], prompt_cache=store).run()[0]


def conversation(model, tokenizer, questions: list[str], store: PromptCache | None) -> tuple[list, list]:
    """(each turn's prompt, each turn's result) of a conversation that asks ``questions`` in turn."""
    messages, prompts, results = [], [], []
    for q in questions:
        messages.append({"role": "user", "content": q})
        prompts.append(encode_prompt(tokenizer, messages))
        results.append(run(model, tokenizer, prompts[-1], REPLY, store))
        messages.append({"role": "assistant", "content": results[-1].text})
    return prompts, results


def ttft(model, tokenizer, prompts: list[list[int]], warm: list[list[int]] | None) -> list[tuple[float, int]]:
    """(TTFT in s, prompt tokens taken from the cache) of each of ``prompts``, in order; ``warm``: the cache first reads
    these (None: no cache). A prompt's own reading is kept too, as a server's would be."""
    store = None
    if warm is not None:
        store = PromptCache(STORE)
        for p in warm:
            run(model, tokenizer, p, 1, store)
    out = []
    for p in prompts:
        r = run(model, tokenizer, p, 1, store)
        out.append((r.prefill_s, r.cached_tokens))
    return out


def medians(samples: list[list[tuple[float, int]]]) -> list[dict]:
    return [{"ttft_ms": round(1000 * statistics.median(s[k][0] for s in samples), 1), "cached_tokens": samples[0][k][1]}
            for k in range(len(samples[0]))]


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, "float32", reference=True)
    verifier = on_base(model, reference)
    out = {"machine": machine_info(2, "float32"), "mode": "verify", "reply_tokens": REPLY, "reps": REPS,
           "store_bytes": STORE}
    chats = category_prompts("chat", TURNS + QUESTIONS, seed=0)
    questions = [c["prompt"] for c in chats[:TURNS]]

    runs = {"none": [], "cache": []}
    for _ in range(REPS):
        for name in runs:
            store = PromptCache(STORE) if name == "cache" else None
            prompts, results = conversation(verifier, tokenizer, questions, store)
            runs[name].append((prompts, results, store))
    prompts, plain, _ = runs["none"][0]
    _, cached, store = runs["cache"][0]
    out["conversation"] = {
        "prompt_tokens": [len(p) for p in prompts],
        "reply_tokens": [len(r.token_ids) for r in plain],
        "same_replies": all([r.token_ids for r in results] == [r.token_ids for r in plain]
                            for name in runs for _, results, _ in runs[name]),
        "cached_tokens": [r.cached_tokens for r in cached],
        "store": store.stats(),
        "ttft": {name: [{"ttft_ms": round(1000 * statistics.median(results[k].prefill_s for _, results, _ in v), 1),
                         "cached_tokens": v[0][1][k].cached_tokens} for k in range(TURNS)]
                 for name, v in runs.items()}}

    context = " ".join(p["prompt"] for p in category_prompts("summarisation", 8))[:CONTEXT_CHARS]
    system = {"role": "system", "content": "Answer using this context. " + context}
    asks = [encode_prompt(tokenizer, [system, {"role": "user", "content": c["prompt"]}]) for c in chats[TURNS:]]
    samples = {"none": [], "cache": []}
    for _ in range(REPS):
        samples["none"].append(ttft(verifier, tokenizer, asks[1:], None))
        samples["cache"].append(ttft(verifier, tokenizer, asks[1:], asks[:1]))
    out["system_prompt"] = {"prompt_tokens": [len(p) for p in asks[1:]],
                            "ttft": {k: medians(v) for k, v in samples.items()}}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
