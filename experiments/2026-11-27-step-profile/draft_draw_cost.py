"""What one sampled MSD draft's draw costs: over the full LM head's vocabulary with every logit outside the draft
vocabulary at -inf (the engine before session 37), and over the draft vocabulary alone, placed in the full vocabulary
after (`VerifyGeneration._draw_drafts` since). The default model, its 4096-token draft vocabulary, T 0.7, top-p 0.9,
one row, alternated, median of 500 each, 2 threads; and whether both drew the same tokens.

    python experiments/2026-11-27-step-profile/draft_draw_cost.py \
        > experiments/2026-11-27-step-profile/draft_draw_cost.json
"""

import json
import statistics
import time

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core.loading import load_model
from hamburger.engine.sampling import DecodingConfig, draw_each
from hamburger.engine.verify import VerifyGeneration

REPS = 500


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer = load_model(None)[:2]
    cfg = DecodingConfig(max_new_tokens=8, temperature=0.7, top_p=0.9, seed=0)
    run = VerifyGeneration(model, tokenizer, [[1, 2, 3]], cfg, draft_vocab=model.draft_vocab)
    vocab, weight, _ = run._draft_head
    size = model.base.get_output_embeddings().weight.shape[0]
    hidden = torch.randn(1, model.base.config.hidden_size, generator=torch.Generator().manual_seed(0))

    def full_head(gen):  # the draft vocabulary's logits in a full row of -inf, warped and drawn over all of it
        logits = torch.full((1, size), float("-inf")).index_copy_(1, vocab, (hidden @ weight).float())
        return draw_each(logits, [cfg], [gen])[0]

    def draft_vocabulary(gen):
        return run._draw_drafts(hidden, [cfg], [gen])[0]

    arms = {"full_head": full_head, "draft_vocabulary": draft_vocabulary}
    gens = {name: torch.Generator().manual_seed(0) for name in arms}
    times, drawn = {name: [] for name in arms}, {name: [] for name in arms}
    with torch.inference_mode():
        for rep in range(2 * REPS):
            name = ("full_head", "draft_vocabulary")[rep % 2]
            start = time.perf_counter()
            token = arms[name](gens[name])
            times[name].append(time.perf_counter() - start)
            drawn[name].append(int(token[0]))
    print(json.dumps({"machine": machine_info(2, "float32"), "median_ms": {
        k: round(1000 * statistics.median(v), 4) for k, v in times.items()},
        "same_tokens": drawn["full_head"] == drawn["draft_vocabulary"], "draws": REPS}, indent=1))


if __name__ == "__main__":
    main()
