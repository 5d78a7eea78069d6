"""What the prompt cache holds when prompts share their start (default model, fp32, 2 threads, lossless verify: the
server's default mode), at the commit it runs in (the record names it): QUESTIONS dev chat questions, each a
conversation of its own after the same system prompt of about 600 tokens (dev summarisation texts, as in
`experiments/2026-12-06-prompt-cache/turns.py`), each answered (up to REPLY tokens) through one store of the default
256 MiB, as a server's would be. Records the store's bytes and kept prompts after each question, the prompt tokens each
took from the store, and whether every answer equals the one read without a store.

    python experiments/2026-12-06-shared-prompt-starts/held.py > experiments/2026-12-06-shared-prompt-starts/held.json
"""

import json

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.prompt_cache import PROMPT_CACHE_MIB, PromptCache
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base

QUESTIONS, REPLY = 16, 16
CONTEXT_CHARS = 2400  # the system prompt's context: about 600 tokens


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, "float32", reference=True)
    verifier = on_base(model, reference)
    context = " ".join(p["prompt"] for p in category_prompts("summarisation", 8))[:CONTEXT_CHARS]
    system = {"role": "system", "content": "Answer using this context. " + context}
    chats = category_prompts("chat", QUESTIONS, seed=1)
    asks = [encode_prompt(tokenizer, [system, {"role": "user", "content": c["prompt"]}]) for c in chats]
    store, rows = PromptCache(int(PROMPT_CACHE_MIB * 2 ** 20)), []
    cfg = DecodingConfig(max_new_tokens=REPLY)
    for ask in asks:
        kept = VerifyGeneration(verifier, tokenizer, [ask], [cfg], prompt_cache=store).run()[0]
        alone = VerifyGeneration(verifier, tokenizer, [ask], [cfg]).run()[0]
        stats = store.stats()
        rows.append({"prompt_tokens": len(ask), "answer_tokens": len(kept.token_ids), "cached_tokens": kept.cached_tokens,
                     "same_answer": kept.token_ids == alone.token_ids, "store_mib": round(stats["bytes"] / 2 ** 20, 2),
                     "kept_prompts": stats["prompts"]})
    out = {"benchmark": "shared_prompt_starts",
           "machine": machine_info(2, "float32"), "mode": "verify", "reply_tokens": REPLY,
           "store_mib": PROMPT_CACHE_MIB, "questions": rows, "store": store.stats()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
