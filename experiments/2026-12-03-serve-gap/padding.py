"""Stage 4 (README.md), a measurement: how much of the attention's reading in a batch is padding? The serve work of
stage 1 (16 dev prompts, greedy, 128 new tokens, the server's CPU drafting, continuous batching of up to B rows), in
one process, lossless verify and verify_fold (its default fold, on the checkpoint's fold model). At every
`SlotCache.extend` (once per forward of a cache) it counts the slots each layer reads for the new queries: rows x
queries x width of the full-precision cache, and for verify_fold's store the same over the store's width, against
the slots that are held (valid). Padding share = 1 - held / read, summed over the run. One JSON line per (mode, B).

    python padding.py >> padding.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import torch

    from benchmarks.load_test import prompts
    from hamburger.bench.machine import machine_info
    from hamburger.core.loading import fold_model, load_model
    from hamburger.engine.cache import SlotCache
    from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.ngrams import model_ngrams
    from hamburger.engine.prompt import encode_prompt
    from hamburger.engine.quantized import QuantizedHistoryCache
    from hamburger.engine.sampling import DecodingConfig
    from hamburger.engine.verify import VerifyGeneration, on_base
    from hamburger.serve.server import CPU_DRAFT_ROWS

    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    folding = parse_folding(DEFAULT_FOLD)
    models = {"verify": (on_base(model, reference), None), "verify_fold": (fold_model(None, folding, model), folding)}
    ids = [encode_prompt(tokenizer, [{"role": "user", "content": t}]) for t in prompts(16, "dev")]
    ngrams, cfg = model_ngrams(model, None), DecodingConfig(max_new_tokens=128)
    counts = {}
    extend = SlotCache.extend

    def counted(self, new_valid):
        mask = extend(self, new_valid)
        rows, queries = new_valid.shape
        counts["read"] += rows * queries * self.valid.shape[1]
        counts["held"] += queries * int(self.valid.sum())
        if isinstance(self, QuantizedHistoryCache):
            counts["store_read"] += rows * queries * self.stored.shape[1]
            counts["store_held"] += queries * int(self.stored.sum())
        return mask

    SlotCache.extend = counted
    for batch in (4, 8):
        for mode in ("verify", "verify_fold"):
            counts.update(read=0, held=0, store_read=0, store_held=0)
            m, fold = models[mode]
            waiting, run = list(range(len(ids))), None
            first = [waiting.pop(0) for _ in range(batch)]

            def poll():
                while waiting and run.active_rows < batch:
                    run.add(ids[waiting.pop(0)], cfg)

            run = VerifyGeneration(m, tokenizer, [ids[i] for i in first], [cfg] * batch, draft_vocab=m.draft_vocab,
                                   fold=fold, lookup=PromptLookup(), ngrams=ngrams, draft_rows=CPU_DRAFT_ROWS,
                                   poll=poll)
            tokens = 0
            for event in run:
                if event.finish_reason is not None:
                    tokens += len(run.result(event.row).token_ids)
                    run.release(event.row)
            share = {k: round(1 - counts[h] / counts[r], 4) if counts[r] else None
                     for k, h, r in (("padding_share", "held", "read"), ("store_padding_share", "store_held",
                                                                             "store_read"))}
            print(json.dumps({"mode": mode, "batch": batch, "tokens": tokens, **counts, **share,
                              "machine": machine_info(2, "float32")}), flush=True)


if __name__ == "__main__":
    main()
