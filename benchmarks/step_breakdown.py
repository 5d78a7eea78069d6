"""Where a HAMburger decode step goes: the micro loop, the macro step and the rest, host loop vs device loop.

One decode step = the micro loop (one group per row: LM head, token choice, stop head per token, the
micro-step decoder per extra token) + the macro step (embedder + one base forward) + the host's work on the
groups (token bookkeeping, detokenization, events). Each `Generation` is run twice per setting: once plain
(decode tok/s) and once with the micro loop and the macro step wrapped by timers (a device synchronize around
each on a GPU), which give per-step medians and the micro loop's share of a step. The micro loop is also split
by the number of micro steps it ran, and its pieces are timed alone at the same batch size
(`step_cost.component_times`): what one more micro step costs.

    python benchmarks/step_breakdown.py --threads 1 --batch-sizes 1,8 \\
        --out benchmarks/results/step-breakdown/cpu.json
    python benchmarks/step_breakdown.py --device cuda --batch-sizes 1,32 --compile --out ...   # a GPU session

The bundled trained model decodes at its default knob (real group lengths); `--shape` times a random-weight
base of that architecture with an untrained graft forced to groups of max_steps instead. EOS is ignored so
every row makes `--new-tokens` tokens.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.step_cost import PROMPT, NullTokenizer, component_times, random_base, sync, SHAPES  # noqa: E402
from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.bench.prompts import category_prompts  # noqa: E402
from hamburger.engine.generate import Generation  # noqa: E402
from hamburger.engine.micro import compile_micro_loop  # noqa: E402
from hamburger.engine.prompt import encode_prompt  # noqa: E402
from hamburger.engine.sampling import DecodingConfig  # noqa: E402


def load(args):
    """(model, tokenizer, the base's name, a note on the weights)."""
    if args.shape:
        from hamburger.core.config import HamburgerConfig
        from hamburger.core.model import HamburgerModel

        model = HamburgerModel(random_base(args.shape, args.dtype, args.device), HamburgerConfig(max_steps=4))
        with torch.no_grad():
            model.stop_head.net[2].bias.fill_(-100.0)  # always continue: groups of exactly max_steps
        return model.eval().to(args.device), NullTokenizer(), args.shape, "RANDOM weights, groups forced to 4"
    from hamburger.cli.main import default_model
    from hamburger.core.checkpoint import load_checkpoint

    model, tokenizer, info = load_checkpoint(default_model(), args.dtype, merge_adapters=True)
    return model.eval().to(args.device), tokenizer, info.spec, "the bundled trained default model"


def prompt_ids(tokenizer, model, batch: int) -> list[list[int]]:
    if isinstance(tokenizer, NullTokenizer):
        g = torch.Generator().manual_seed(0)
        return [torch.randint(3, model.base.config.vocab_size, (44,), generator=g).tolist() for _ in range(batch)]
    prompts = [p["prompt"] for p in category_prompts("chat", batch)] if batch > 1 else [PROMPT]
    return [encode_prompt(tokenizer, p) for p in prompts]


def timed_run(gen: Generation, device) -> list[dict]:
    """Run ``gen`` with its micro loop and macro step timed; one record per decode step."""
    steps: list[dict] = []
    micro, macro = gen._micro, gen._macro_step

    def timed_micro(hidden, features, rows):
        sync(device)
        start = time.perf_counter()
        out = micro(hidden, features, rows)
        sync(device)
        ran = out[0].shape[1] if out is not None else max(len(r.group) for r in rows)
        steps.append({"start": start, "micro_s": time.perf_counter() - start, "micro_steps": ran, "rows": len(rows)})
        return out

    def timed_macro(*args):
        sync(device)
        start = time.perf_counter()
        out = macro(*args)
        sync(device)
        steps[-1]["macro_s"] = time.perf_counter() - start
        return out

    gen._micro, gen._macro_step = timed_micro, timed_macro
    gen.run()
    for this, after in zip(steps, steps[1:]):
        this["step_s"] = after["start"] - this["start"]  # micro loop, host work on the groups, macro step
    return [s for s in steps if "step_s" in s and "macro_s" in s]


def median_ms(values) -> float | None:
    values = list(values)
    return 1000 * statistics.median(values) if values else None


def measure(model, tokenizer, ids, args, loop: str) -> dict:
    cfg = DecodingConfig(max_new_tokens=args.new_tokens, confidence=args.confidence, ignore_eos=True)
    static = args.compile is not None
    plain, records = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        results = Generation(model, tokenizer, ids, cfg, static_cache=static, micro_loop=loop).run()
        sync(args.device)
        wall = time.perf_counter() - start
        decode_s = max(r.decode_s for r in results)
        plain.append({"decode_tok_s": sum(r.tokens - r.groups[0] for r in results) / decode_s, "wall_s": wall,
                      "tau": sum(r.tokens for r in results) / sum(r.forwards for r in results)})
        records += timed_run(Generation(model, tokenizer, ids, cfg, static_cache=static, micro_loop=loop),
                             args.device)
    step = median_ms(r["step_s"] for r in records)
    micro = median_ms(r["micro_s"] for r in records)
    macro = median_ms(r["macro_s"] for r in records)
    by_steps = {}
    for n in sorted({r["micro_steps"] for r in records}):
        sel = [r["micro_s"] for r in records if r["micro_steps"] == n]
        by_steps[n] = {"micro_loop_ms": median_ms(sel), "n": len(sel)}
    share = [r["micro_s"] / r["step_s"] for r in records]
    return {"decode_tok_s": statistics.median(p["decode_tok_s"] for p in plain),
            "decode_tok_s_runs": [p["decode_tok_s"] for p in plain], "tau": plain[0]["tau"],
            "step_ms": step, "micro_loop_ms": micro, "macro_step_ms": macro,
            "host_rest_ms": median_ms(r["step_s"] - r["micro_s"] - r["macro_s"] for r in records),
            "micro_loop_share": statistics.median(share), "micro_loop_ms_by_micro_steps": by_steps,
            "steps_timed": len(records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--batch-sizes", default="1,8")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--confidence", type=float, default=None, help="the knob (default: the model's own)")
    parser.add_argument("--loops", default="host,device")
    parser.add_argument("--shape", choices=sorted(SHAPES), default=None,
                        help="time a random-weight base of this architecture instead of the bundled model")
    parser.add_argument("--compile", default=None, nargs="?", const="inductor", metavar="BACKEND",
                        help="static caches, the macro step and the device micro loop compiled by this backend "
                             "(CUDA graphs on a GPU)")
    parser.add_argument("--note", default="", help="free text recorded with the result (e.g. what shares the machine)")
    parser.add_argument("--out", default="benchmarks/results/step-breakdown/step_breakdown.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, spec, weights = load(args)
    if args.compile:
        mode = "reduce-overhead" if torch.device(args.device).type == "cuda" else None
        model.compile_decoding(mode=mode, backend=args.compile)
        compile_micro_loop(model, mode=mode, backend=args.compile)
    loops = args.loops.split(",")
    results = []
    with torch.inference_mode():
        for batch in [int(b) for b in args.batch_sizes.split(",")]:
            ids = prompt_ids(tokenizer, model, batch)
            for loop in loops:  # warm-up (and compilation)
                Generation(model, tokenizer, ids, DecodingConfig(max_new_tokens=16, ignore_eos=True,
                                                                   confidence=args.confidence),
                           static_cache=args.compile is not None, micro_loop=loop).run()
            for loop in loops:
                row = {"batch": batch, "micro_loop": loop, **measure(model, tokenizer, ids, args, loop)}
                print(json.dumps({k: v for k, v in row.items() if k != "micro_loop_ms_by_micro_steps"}), flush=True)
                results.append(row)
            results.append({"batch": batch, "components_ms": component_times(model, batch=batch)})
    record = {"benchmark": "step_breakdown", "base": spec, "weights": weights, "device": args.device,
              "compile": args.compile, "confidence": args.confidence or model.config.default_confidence,
              "new_tokens": args.new_tokens, "repeats": args.repeats, "note": args.note,
              "machine": machine_info(args.threads, args.dtype, torch.device(args.device).type), "results": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(args.out)


if __name__ == "__main__":
    main()
