"""Checks the library's full heads (`hamburger/engine/full_heads.py`) against the experiment's patch they replace
(`../2026-11-28-full-heads/heads.py`), on the shipped model with its fold reader and the default fold: the same
answers token for token, greedy and sampled (T 0.7, top-p 0.9, seeded), as a batch of rows; then each one's KV. The
patch keeps the folded slots in its buffers (its bytes are not a real cache's); the library's bytes are measured.

    python experiments/2026-11-28-full-head-cache/check.py > experiments/2026-11-28-full-head-cache/check.txt
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "experiments" / "2026-11-28-full-heads"))
import heads as patch  # noqa: E402

from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.core.loading import load_model  # noqa: E402
from hamburger.data.prompts import build_prompts  # noqa: E402
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding  # noqa: E402
from hamburger.engine.lookup import PromptLookup  # noqa: E402
from hamburger.engine.prompt import encode_prompt  # noqa: E402
from hamburger.engine.sampling import DecodingConfig  # noqa: E402
from hamburger.engine.verify import VerifyGeneration  # noqa: E402

PROMPTS = 4  # the first GSM8K prompts of the training split (no dev or test rows)
TOKENS = 160


def main() -> None:
    torch.set_num_threads(2)
    chosen = ROOT / "experiments/2026-11-28-full-heads/chosen.py"
    heads = json.loads(subprocess.check_output([sys.executable, str(chosen), "4"], text=True))
    model, tokenizer = load_model(None, fold_reader=True)[:2]
    ids = [encode_prompt(tokenizer, r["prompt"]) for r in build_prompts(["gsm8k"], "train", PROMPTS, seed=0)]
    fold = parse_folding(DEFAULT_FOLD)
    configs = {"greedy": [DecodingConfig(max_new_tokens=TOKENS, ignore_eos=True)] * PROMPTS,
               "sampled": [DecodingConfig(max_new_tokens=TOKENS, temperature=0.7, top_p=0.9, seed=s, ignore_eos=True)
                           for s in range(PROMPTS)]}

    def decode(kind: str, full) -> tuple[list, float]:
        clock = time.perf_counter()
        out = VerifyGeneration(model, tokenizer, ids, configs[kind], fold=fold, lookup=PromptLookup(tokens=10),
                               full_heads=full).run()
        return out, time.perf_counter() - clock

    print(json.dumps({"machine": machine_info(2, "float32", "cpu"), "heads": heads, "fold": DEFAULT_FOLD,
                      "prompts": PROMPTS, "tokens": TOKENS}))
    library = {kind: decode(kind, heads) for kind in configs}
    plain = {kind: decode(kind, []) for kind in configs}
    lossless = VerifyGeneration(model, tokenizer, ids, configs["greedy"], lookup=PromptLookup(tokens=10),
                                full_heads=[]).run()
    patch.install()
    patch.set_full_heads(heads)
    model._lean = None  # (the patched stack is built anew)
    patched = {kind: decode(kind, []) for kind in configs}
    for kind in configs:
        same = [a.token_ids == b.token_ids for a, b in zip(library[kind][0], patched[kind][0])]
        first = [next((i for i, (x, y) in enumerate(zip(a.token_ids, b.token_ids)) if x != y), None)
                 for a, b in zip(library[kind][0], patched[kind][0])]
        print(json.dumps({"decoding": kind, "library_equals_patch": same, "first_difference": first,
                          "library_kv_slots": [r.kv_slots for r in library[kind][0]],
                          "library_kv_bytes": [r.kv_bytes for r in library[kind][0]],
                          "plain_fold_kv_slots": [r.kv_slots for r in plain[kind][0]],
                          "plain_fold_kv_bytes": [r.kv_bytes for r in plain[kind][0]],
                          "ordinary_kv_slots": [r.kv_slots_ordinary for r in library[kind][0]],
                          "ordinary_kv_bytes": [r.kv_bytes_ordinary for r in library[kind][0]],
                          "seconds": {"library": round(library[kind][1], 1), "plain_fold": round(plain[kind][1], 1),
                                      "patch": round(patched[kind][1], 1)}}))
    print(json.dumps({"decoding": "greedy, lossless verify", "kv_bytes": [r.kv_bytes for r in lossless]}))


if __name__ == "__main__":
    main()
