"""Verify mode (lossless: the MSD drafts, the base verifies) against HF `generate` and HF prompt lookup.

Greedy (or, with `--sample`, sampled at temperature 0.7, top-p 0.9, every method seeded alike on every prompt;
a sampled verify mode is speculative sampling), batch 1, fp32, dev-split prompts (chat and GSM8K), methods interleaved prompt by prompt in one
process and one environment; several draft policies of verify mode side by side (stop head at a few
confidences, fixed draft counts). Also the cost of the parts of a verify step. Results go to a JSON file,
rewritten after every prompt (a killed run keeps what it measured). MKL_CBWR is what `import hamburger` sets before
torch loads (AVX2 on AMD's AVX2 CPUs, where MKL's fp32 forward of 2-4 positions then costs about as much as one;
nothing on Intel's) unless given; every method runs under the same setting, recorded with the machine.

    python -m benchmarks.verify_bench --out benchmarks/results/verify/verify_bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from itertools import zip_longest
from pathlib import Path


DRAFT_DATA = "data/segmented/smollm2-135m-instruct.train.jsonl"  # training responses: token frequencies


def build(model, reference_model, tokenizer, policies: list[str], prompt_lookup: int, sampling: dict | None = None,
          checkpoint: str | None = None):
    from hamburger.bench.methods import HFMethod, VerifyMethod
    from hamburger.core.loading import fold_model
    from hamburger.core.modules import Drafter
    from hamburger.engine.folding import parse_folding
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.ngrams import model_ngrams
    from hamburger.engine.verify import draft_vocabulary, on_base

    verify_model = on_base(model, reference_model)
    base = reference_model.base
    methods = [HFMethod(base, tokenizer, sampling=sampling),
               HFMethod(base, tokenizer, "prompt_lookup", sampling=sampling, prompt_lookup_num_tokens=prompt_lookup)]
    for p in policies:  # "c0.5": stop head at confidence 0.5; "k2": 2 drafts per step; ":v4096": draft vocabulary;
        drafting, _, fold = p.partition("@")  # ":p10": prompt lookup drafts of up to 10 tokens where the text matches;
        policy, *options = drafting.split(":")  # "@segments:8": folding (engine/folding.py) on the checkpoint itself
        vocab = next((int(o[1:]) for o in options if o.startswith("v")), None)
        lookup = next((PromptLookup(tokens=int(o[1:])) for o in options if o.startswith("p")), None)
        ngrams = next((model_ngrams(model, int(o[1:]) if o[1:] else None) for o in options if o.startswith("n")),
                      None)  # ":n": the checkpoint's n-gram table drafts where lookup finds no match (":n5": up to 5)
        # ":m": the model's own MSD drafts even where the checkpoint has a verify drafter
        drafter = Drafter.of(model) if "m" in options else None
        max_draft = next((int(o[1:]) for o in options if o.startswith("d")), None)  # ":d2": at most 2 MSD drafts
        kind = dict(draft=int(policy[1:])) if policy.startswith("k") else dict(confidence=float(policy[1:]))
        folding = parse_folding(fold) if fold else None  # (folding: the checkpoint, or its fold reader)
        methods.append(VerifyMethod(fold_model(checkpoint, folding, model) if fold else verify_model, tokenizer,
                                    name=f"verify@{p}", fold=folding, lookup=lookup, sampling=sampling,
                                    draft_vocab=draft_vocabulary(DRAFT_DATA, vocab) if vocab else None,
                                    ngrams=ngrams, drafter=drafter, max_draft=max_draft, **kind))
    return verify_model, methods


def summarise(rows: list[dict]) -> list[dict]:
    """Per (category, method): pooled decode tok/s, speedup vs HF generate, tau, identical outputs, acceptance."""
    out = []
    for category in sorted({r["category"] for r in rows}) + ["all"]:
        group = [r for r in rows if category in ("all", r["category"])]
        for method in dict.fromkeys(r["method"] for r in group):
            rs = [r for r in group if r["method"] == method]
            decoded = sum(r["tokens"] - r["first_tokens"] for r in rs)
            decode_s = sum(r["decode_s"] for r in rs)
            entry = {"category": category, "method": method, "runs": len(rs),
                     "decode_tok_s": decoded / decode_s if decode_s else 0.0,
                     "tokens_per_forward": sum(r["tokens"] for r in rs) / sum(r["forwards"] for r in rs),
                     "identical_to_hf": sum(r["identical_to_hf"] for r in rs) / len(rs)}
            if all(r.get("kv_slots") for r in rs):  # the answers' cache slots against one per token but the last
                entry["kv_ratio_answer"] = sum(r["kv_slots"] - r["prompt_tokens"] for r in rs) / \
                    sum(r["tokens"] - 1 for r in rs)
            if "drafts" in rs[0]:
                drafts = [d for r in rs for d in r["drafts"]]
                accepted = [a for r in rs for a in r["accepted"]]
                depth = max(drafts, default=0)
                entry["drafted_per_step"] = sum(drafts) / max(1, len(drafts))
                entry["acceptance_by_position"] = [
                    sum(a >= i for a in accepted) / max(1, sum(d >= i for d in drafts)) for i in range(1, depth + 1)]
                entry["drafts_by_position"] = [sum(d >= i for d in drafts) for i in range(1, depth + 1)]
            if any(any(r.get("looked_up", ())) for r in rs):  # steps prompt lookup drafted, drafts it got kept
                looked = [a for r in rs for a, up in zip(r["accepted"], r["looked_up"]) if up]
                entry["lookup_steps"] = len(looked) / max(1, sum(len(r["looked_up"]) for r in rs))
                entry["lookup_kept_per_step"] = sum(looked) / len(looked)
            out.append(entry)
        hf = next(e for e in out if e["category"] == category and e["method"] == "hf_generate")
        for e in out:
            if e["category"] == category:
                e["speedup_vs_hf"] = e["decode_tok_s"] / hf["decode_tok_s"] if hf["decode_tok_s"] else None
    return out


def median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def step_costs(model, prompt_ids: list[int], reps: int, max_k: int = 4) -> dict:
    """Median ms of the parts of a verify step, on the cache of a prompt: the base forward with 1..max_k+1
    positions (taps included), the LM head on as many rows (default and fast layout), one MSD draft step (first: taps + the pending
    token; later: one token), the stop head."""
    import torch
    from transformers import DynamicCache

    from hamburger.engine.cache import SlotCache
    from hamburger.engine.verify import SMALL_HEAD_ROWS

    costs = {"cache_slots": len(prompt_ids)}
    with torch.inference_mode():
        cache = SlotCache(model.base.config, 1, model.device)
        ids = torch.tensor([prompt_ids])
        mask = cache.extend(torch.ones(1, len(prompt_ids), dtype=torch.bool))
        final, features = model.base_forward(model.embed(ids), torch.arange(len(prompt_ids))[None], mask, cache.kv)
        hidden, feats = model.decode_features(final, features)
        d = hidden.shape[-1]
        for k in range(1, max_k + 2):
            x = torch.tensor([[prompt_ids[-1]] * k])
            pos = torch.arange(len(prompt_ids), len(prompt_ids) + k)[None]

            def forward():
                m = cache.extend(torch.ones(1, k, dtype=torch.bool))
                model.base_forward(model.embed(x), pos, m, cache.kv)
                cache.drop_last(k)

            forward()
            costs[f"base_forward_{k}_positions_ms"] = median_ms(forward, reps)
            rows = torch.randn(k, d)
            costs[f"lm_head_{k}_rows_ms"] = median_ms(lambda: model.decode_logits(rows), reps)
            costs[f"lm_head_{k}_rows_fast_layout_ms"] = median_ms(  # what a verify step uses
                lambda: model.decode_logits(rows, max_rows=SMALL_HEAD_ROWS), reps)
        token = torch.tensor([prompt_ids[-1]])
        emb = model.embed(token)

        def first_draft():
            h = model.decoder(torch.cat([feats, emb[:, None]], 1), DynamicCache(), 0)[:, -1]
            model.stop_head(h, model.embed(model.decode_logits(h).argmax(-1)))

        msd_cache = DynamicCache()
        model.decoder(torch.cat([feats, emb[:, None]], 1), msd_cache, 0)
        m = feats.shape[1] + 1

        def later_draft():
            h = model.decoder(emb[:, None], msd_cache, m)[:, -1]
            model.stop_head(h, model.embed(model.decode_logits(h).argmax(-1)))
            msd_cache.crop(-1)

        costs["msd_first_draft_step_ms"] = median_ms(first_draft, reps)
        costs["msd_later_draft_step_ms"] = median_ms(later_draft, reps)
        costs["msd_layers_only_later_step_ms"] = median_ms(
            lambda: (model.decoder(emb[:, None], msd_cache, m), msd_cache.crop(-1)), reps)
        costs["stop_head_ms"] = median_ms(lambda: model.stop_head(hidden, emb), reps)
    return costs


def main() -> int:
    import hamburger  # noqa: F401  (its MKL setting, before torch loads)

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="benchmarks/results/verify/verify_bench.json")
    parser.add_argument("--model", default=None, help="HAMburger checkpoint whose MSD drafts (default: the shipped one)")
    parser.add_argument("--n-chat", type=int, default=5)
    parser.add_argument("--n-math", type=int, default=5)
    parser.add_argument("--offset", type=int, default=0,
                        help="skip this many prompts of each category first (another fixed set of dev prompts)")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--policies", default="c0.5,c0.5:v4096,k1:v4096",
                        help="verify draft policies: cX = stop head at confidence X, kN = N drafts per step; a suffix "
                             ":vN restricts drafts to the N most frequent training-response tokens, :pN drafts up to N "
                             "tokens by prompt lookup where the text's last n-gram occurred before, :n (:nN) drafts "
                             "from the checkpoint's n-gram table where lookup does not (up to N tokens), :m drafts "
                             "with the model's own MSD where the checkpoint has a verify drafter, :dN lets the MSD "
                             "draft at most N tokens per step; a suffix @GROUPS:WINDOW folds the cache "
                             "(engine/folding.py, e.g. c0.5@segments:8; not lossless)")
    parser.add_argument("--prompt-lookup", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cost-reps", type=int, default=15)
    parser.add_argument("--skip-costs", action="store_true")
    parser.add_argument("--sample", action="store_true",
                        help="sample (temperature 0.7, top-p 0.9: eval's base-sampled settings, seed 0 on every prompt)")
    args = parser.parse_args()

    import torch

    from hamburger.bench.prompts import category_prompts
    from hamburger.core.loading import load_model
    from hamburger.engine.prompt import encode_prompt
    from hamburger.bench.machine import machine_info
    from hamburger.eval.plausibility import SAMPLED

    torch.set_num_threads(args.threads)
    model, tokenizer, info, reference = load_model(args.model, "float32", reference=True)
    chat, math = (category_prompts(c, args.offset + n)[args.offset:] for c, n in (("chat", args.n_chat),
                                                                                  ("math", args.n_math)))
    prompts = [p for pair in zip_longest(chat, math) for p in pair if p]  # alternate: a cut run covers both
    ids = [encode_prompt(tokenizer, p["prompt"]) for p in prompts]
    sampling = SAMPLED if args.sample else None
    verify_model, methods = build(model, reference, tokenizer, args.policies.split(","), args.prompt_lookup, sampling,
                                  args.model)
    result = {"what": f"verify mode vs HF generate and prompt lookup, {'sampled' if sampling else 'greedy'}, batch 1",
              "sampling": sampling,
              "settings": vars(args), "model": {"checkpoint": args.model or "default", "base": Path(info.spec).name,
                                                "fingerprint": info.fingerprint},
              "machine": machine_info(torch.get_num_threads(), "float32"),
              "note": "shared 2-core machine (a training job and other engineers' runs beside it): timings are noisy",
              "rows": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save():
        result["summary"] = summarise(result["rows"]) if result["rows"] else []
        result["machine_end_load_average"] = os.getloadavg()
        out.write_text(json.dumps(result, indent=1) + "\n")

    if not args.skip_costs:
        result["step_costs"] = step_costs(verify_model, ids[0], args.cost_reps)
        save()
        print(json.dumps(result["step_costs"], indent=1), flush=True)
    for m in methods:
        m.run(ids[0], 8)
    for i, (prompt, x) in enumerate(zip(prompts, ids)):
        for rep in range(args.repeats):
            reference_ids = None
            for m in methods:
                r = m.run(x, args.max_new_tokens)
                reference_ids = reference_ids if reference_ids is not None else r.token_ids  # hf_generate first
                row = {"category": prompt["category"], "prompt_id": prompt.get("id"), "repeat": rep, "method": m.name,
                       "tokens": r.tokens, "first_tokens": r.first_tokens, "forwards": r.forwards,
                       "ttft_s": r.ttft_s, "decode_s": r.decode_s, "decode_tok_s": r.decode_tok_s,
                       "identical_to_hf": r.token_ids == reference_ids, "kv_slots": r.kv_slots,
                       "prompt_tokens": r.prompt_tokens, "load_average": os.getloadavg()[0]}
                if getattr(m, "last", None) is not None:
                    row["drafts"], row["accepted"] = m.last.drafts, m.last.accepted
                    row["looked_up"] = m.last.looked_up
                result["rows"].append(row)
                print(f"[{i + 1}/{len(prompts)}] {m.name:14s} {r.decode_tok_s:6.1f} tok/s  "
                      f"tau {r.tau:.2f}  same {row['identical_to_hf']}", flush=True)
        save()
    for e in result["summary"]:
        if e["category"] == "all":
            print(e, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
