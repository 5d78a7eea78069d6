"""The cost of the top-p (nucleus) filter on real next-token distributions: a full sort of the vocabulary (the
definition, what `sampling.warp_logits` did until session 29) against `sampling.nucleus` (the k most likely tokens,
k grown until they reach top-p), per row, on one thread. The distributions are the base model's own, at every
position of its greedy answers to dev prompts, divided by the temperature; both filters must keep the same set
(masses added up in float64), or the run fails. Then whole draws in batches of --batch rows: `sampling.draw_tokens`
(sorts the vocabulary, no host sync: the compiled device micro loop's) against `sampling.draw_rows` (`nucleus`, for
loops the host drives: distillation's sampled rows, `draw_each`), per row.

    python benchmarks/top_p_cost.py --out benchmarks/results/top-p-cost/top_p_cost.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def sorted_nucleus(logits, top_p: float):
    import torch

    probs = logits.softmax(-1).double()
    values, order = torch.sort(probs, descending=True)
    before = values.cumsum(-1) - values
    return torch.zeros_like(probs, dtype=torch.bool).index_fill_(0, order[before < top_p], True)


def per_row_ms(fn, rows, top_p: float, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for x in rows:
            fn(x, top_p)
        times.append((time.perf_counter() - start) / len(rows))
    return 1000 * statistics.median(times)


def batched_ms(draw, rows, top_p: float, batch: int, repeats: int) -> float:
    """Per-row milliseconds of ``draw`` over ``rows`` stacked ``batch`` at a time (already at their temperature)."""
    import torch

    batches = [torch.stack(rows[i:i + batch]) for i in range(0, len(rows), batch)]
    settings = [(torch.ones(len(x), dtype=torch.float64), torch.zeros(len(x), dtype=torch.long),
                 torch.full((len(x),), top_p, dtype=torch.float64), torch.rand(len(x), dtype=torch.float64))
                for x in batches]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for x, setting in zip(batches, settings):
            draw(x, *setting)
        times.append((time.perf_counter() - start) / len(rows))
    return 1000 * statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="benchmarks/results/top-p-cost/top_p_cost.json")
    parser.add_argument("--n-prompts", type=int, default=4, help="chat and as many GSM8K dev prompts (default 4)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--top-p", default="0.9,0.95,0.99", help="comma list (default 0.9,0.95,0.99)")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over all rows; the median is kept")
    parser.add_argument("--batch", type=int, default=32, help="rows per batched draw (default 32, the draws')")
    args = parser.parse_args()

    import torch

    from hamburger.bench.machine import machine_info
    from hamburger.bench.prompts import category_prompts
    from hamburger.core.loading import load_model
    from hamburger.engine.prompt import encode_prompt
    from hamburger.engine.sampling import draw_rows, draw_tokens, nucleus

    torch.set_num_threads(1)
    model, tokenizer, info, reference = load_model(None, "float32", reference=True)
    base = reference.base
    rows = []
    prompts = category_prompts("chat", args.n_prompts) + category_prompts("math", args.n_prompts)
    with torch.inference_mode():
        for p in prompts:
            ids = torch.tensor([encode_prompt(tokenizer, p["prompt"])])
            out = base.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                max_new_tokens=args.max_new_tokens, output_logits=True, return_dict_in_generate=True,
                                pad_token_id=tokenizer.eos_token_id)
            rows += [x[0].float() / args.temperature for x in out.logits]
        result = {"what": "top-p filter per row: full sort vs nucleus (top-k grown until top-p); batched draws "
                          "per row: draw_tokens (sort) vs draw_rows (nucleus)",
                  "settings": vars(args), "rows": len(rows), "vocab": rows[0].shape[-1], "model": Path(info.spec).name,
                  "machine": machine_info(torch.get_num_threads(), "float32"), "by_top_p": []}
        for top_p in (float(v) for v in args.top_p.split(",")):
            same = sum(torch.equal(nucleus(x, top_p), sorted_nucleus(x, top_p)) for x in rows)
            if same != len(rows):
                raise SystemExit(f"top-p {top_p}: the filters disagree on {len(rows) - same} of {len(rows)} rows")
            kept = [int(nucleus(x, top_p).sum()) for x in rows]
            entry = {"top_p": top_p, "kept_median": statistics.median(kept), "kept_max": max(kept),
                     "sort_ms": per_row_ms(sorted_nucleus, rows, top_p, args.repeats),
                     "nucleus_ms": per_row_ms(nucleus, rows, top_p, args.repeats)}
            entry["speedup"] = entry["sort_ms"] / entry["nucleus_ms"]
            entry["batched_draw_tokens_ms"] = batched_ms(draw_tokens, rows, top_p, args.batch, args.repeats)
            entry["batched_draw_rows_ms"] = batched_ms(draw_rows, rows, top_p, args.batch, args.repeats)
            result["by_top_p"].append(entry)
            print(entry, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
