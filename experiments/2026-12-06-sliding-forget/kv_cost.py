"""What forgetting costs and saves on a sliding-window base: a random base of Gemma-3-270m's published shapes (five
sliding layers of window 512 to one full layer; the vocabulary cut to 1,024 rows, as in
`../2026-12-05-lean-families/`), a 40-token random prompt and 1,200 new tokens (ignore EOS), far past the window.

For each mode (`verify`: lossless, the plain cache; `verify_fold`: the default history store; `hamburger` at
confidence 0.5 with an untrained graft), a decode whose sliding layers forget (today's engine) against one whose
cache keeps every slot (`forgetting` emptied, the engine before this change), alternated, `RUNS` each: median tok/s,
the row's KV bytes at its end, the batch's peak, what a decode of one slot per token would hold (`kv_bytes_ordinary`),
and whether both decoded the same tokens. HF `generate` (greedy, transformers' own cache, whose sliding layers keep
the last W - 1 slots) gives the reference: its cache's bytes at the end, measured, and its tok/s.

    python experiments/2026-12-06-sliding-forget/kv_cost.py > experiments/2026-12-06-sliding-forget/kv_cost.json
"""

import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core.config import HamburgerConfig
from hamburger.core.model import HamburgerModel
from hamburger.engine.cache import cache_bytes
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
from hamburger.engine.generate import Generation
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration

PROMPT, NEW, RUNS, SHAPE = 40, 1200, 2, "gemma-3-270m"
LEAN_FAMILIES = Path(__file__).parent.parent / "2026-12-05-lean-families" / "forward_cost.py"
_spec = importlib.util.spec_from_file_location("lean_families", LEAN_FAMILIES)
lean_families = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lean_families)  # (its random bases and null tokenizer)

MODES = {  # mode -> (engine, its keywords, the request's confidence)
    "verify": (VerifyGeneration, {}, None),
    "verify_fold": (VerifyGeneration, {"fold": parse_folding(DEFAULT_FOLD)}, None),
    "hamburger": (Generation, {}, 0.5),
}


def decode(model, prompt: list[int], mode: str, forgets: bool) -> tuple[float, object, int]:
    engine, keywords, confidence = MODES[mode]
    cfg = DecodingConfig(max_new_tokens=NEW, ignore_eos=True, confidence=confidence)
    run = engine(model, lean_families.NullTokenizer(), [prompt], cfg, **keywords)
    make = run._new_cache

    def new_cache(*args, **kwargs):
        cache = make(*args, **kwargs)
        if not forgets:
            cache.forgetting = []
        return cache

    run._new_cache = new_cache
    start = time.perf_counter()
    result = run.run()[0]
    return time.perf_counter() - start, result, run.peak_kv_bytes


def hf_reference(base, prompt: list[int]) -> dict:
    ids = torch.tensor([prompt])
    start = time.perf_counter()
    out = base.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                        do_sample=False, return_dict_in_generate=True, pad_token_id=0)
    seconds = time.perf_counter() - start
    return {"tok_s": round(NEW / seconds, 2), "kv_bytes": cache_bytes(out.past_key_values)[0],
            "tokens": out.sequences[0, len(prompt):].tolist()}


def main() -> None:
    torch.set_num_threads(2)
    base = lean_families.random_base(SHAPE)
    model = HamburgerModel(base, HamburgerConfig(max_steps=4)).eval()
    prompt = torch.randint(4, 1024, (PROMPT,), generator=torch.Generator().manual_seed(1)).tolist()
    out = {"machine": machine_info(2, "float32"), "shape": SHAPE, "sizes": lean_families.SHAPES[SHAPE][2],
           "prompt": PROMPT, "new_tokens": NEW, "runs": RUNS, "fold": DEFAULT_FOLD, "modes": {}}
    with torch.inference_mode():
        hf = hf_reference(base, prompt)
        out["hf_generate"] = {k: v for k, v in hf.items() if k != "tokens"}
        print("hf", out["hf_generate"], file=sys.stderr, flush=True)
        for mode in MODES:
            times, last = {True: [], False: []}, {}
            for rep in range(2 * RUNS):
                forgets = rep % 2 == 0
                seconds, result, peak = decode(model, prompt, mode, forgets)
                times[forgets].append(seconds)
                last[forgets] = (result, peak)
            row = {}
            for forgets, (result, peak) in last.items():
                row["forgets" if forgets else "keeps every slot"] = {
                    "tok_s": round(NEW / statistics.median(times[forgets]), 2), "kv_bytes": result.kv_bytes,
                    "peak_kv_bytes": peak, "kv_bytes_ordinary": result.kv_bytes_ordinary,
                    "kv_slots": result.kv_slots, "kv_slots_ordinary": result.kv_slots_ordinary, "tau": result.tau}
            row["same_tokens"] = last[True][0].token_ids == last[False][0].token_ids
            if mode == "verify":
                row["hf_same_tokens"] = last[True][0].token_ids == hf["tokens"]
            out["modes"][mode] = row
            print(mode, row, file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
