"""The `hamburger` command: one verb per job.

    hamburger graft     put untrained grafted modules on a base model -> checkpoint
    hamburger generate  generate with a HAMburger checkpoint (default: the bundled trained model)
    hamburger prompts / distill / segment   build training data (see each verb's --help)
    hamburger eval / calibrate   quality vs the base; the default knob chosen by rule on dev prompts
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from hamburger.errors import HamburgerError

OPTIONAL_VERBS = {"prompts": "hamburger.data.prompts", "distill": "hamburger.data.distill",
                  "segment": "hamburger.data.segment", "train": "hamburger.train.trainer",
                  "bench": "hamburger.bench.run", "evaluate": "hamburger.eval.run", "calibrate": "hamburger.eval.calibrate",
                  "serve": "hamburger.serve.app", "chat": "hamburger.cli.chat"}
DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[1] / "default_model"


def default_model() -> str:
    """The trained default checkpoint shipped with the package."""
    from hamburger.core.checkpoint import is_checkpoint

    if not is_checkpoint(DEFAULT_MODEL_DIR):
        raise HamburgerError("no trained default model is installed in this version; give --model DIR "
                             "(make one with `hamburger graft --out DIR`, then `hamburger train`)")
    return str(DEFAULT_MODEL_DIR)


def set_threads(n: int | None) -> None:
    import torch

    if n:
        torch.set_num_threads(n)


def load_model(spec: str | None, dtype: str, base: str | None = None, reference: bool = False):
    """A HAMburger checkpoint folder (or the default model) -> (model, tokenizer, base info), ready for
    inference (LoRA adapters folded into the base weights, unless they act at merged slots only). With
    ``reference`` a 4th item: the unchanged base to compare against (see `checkpoint.load_reference`)."""
    from hamburger.core.checkpoint import is_checkpoint, load_checkpoint, load_reference

    path = spec or default_model()
    if not is_checkpoint(path):
        hint = " (it is a base model: run `hamburger graft --base ... --out DIR` first)" if Path(
            path, "config.json").is_file() else ""
        raise HamburgerError(f"{path!r} is not a HAMburger checkpoint{hint}")
    loaded = load_checkpoint(path, dtype, base=base, merge_adapters=True)
    return (*loaded, load_reference(path, loaded[0], dtype, base)) if reference else loaded


# ---------------------------------------------------------------------------------------- graft
def cmd_graft(args) -> int:
    from hamburger.core.base import load_base
    from hamburger.core.checkpoint import save_checkpoint
    from hamburger.core.config import HamburgerConfig
    from hamburger.core.model import HamburgerModel

    set_threads(args.threads)
    base, tokenizer, info = load_base(args.base, "float32")
    config = HamburgerConfig(max_steps=args.max_steps, decoder_layers=args.decoder_layers,
                             decoder_init=args.decoder_init, num_taps=args.num_taps,
                             default_confidence=args.default_confidence)
    model = HamburgerModel(base, config)
    out = save_checkpoint(model, args.out, info)
    n = sum(p.numel() for p in model.grafted_parameters())
    print(f"grafted {n / 1e6:.2f}M parameters (taps after layers {[t + 1 for t in model.config.tap_layers]}, "
          f"{config.decoder_layers} decoder layers, max_steps {config.max_steps}) on {info.spec} -> {out}")
    return 0


def add_graft(sub) -> None:
    p = sub.add_parser("graft", help="make an untrained HAMburger checkpoint on a base model",
                       description="Graft a compositional embedder, micro-step decoder and stop head onto a base "
                                   "causal LM and save the (untrained) checkpoint. Train it with `hamburger train`.")
    p.add_argument("--base", default=None,
                   help="base model: a bundled name (smollm2-135m-instruct, the default), a HF folder or a hub id")
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--max-steps", type=int, default=4, help="largest token group per base forward (default 4)")
    p.add_argument("--decoder-layers", type=int, default=2, help="depth of the micro-step decoder (default 2)")
    p.add_argument("--decoder-init", choices=["copy_last", "random"], default="copy_last",
                   help="initialise the micro-step decoder from the base's last layers or randomly")
    p.add_argument("--num-taps", type=int, default=3,
                   help="intermediate base layers (evenly spaced) fed to the micro-step decoder (default 3)")
    p.add_argument("--default-confidence", type=float, default=0.9,
                   help="confidence used when a request gives none (default 0.9)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.set_defaults(func=cmd_graft)


# ---------------------------------------------------------------------------------------- generate
def read_prompt(args) -> str:
    if args.prompt == "-" or (args.prompt is None and not sys.stdin.isatty()):
        return sys.stdin.read()
    if args.prompt is None:
        raise HamburgerError("give a PROMPT (or '-' to read it from stdin)")
    return args.prompt


def generation_model(args):
    """(model, tokenizer) for `generate`: in verify mode the grafted modules sit on the checkpoint's unchanged
    base (its LoRA adapters or fine-tuned base left out), so the output is that base's own."""
    if args.mode != "verify":
        return load_model(args.model, args.dtype, args.base)[:2]
    from hamburger.engine.verify import on_base

    model, tokenizer, _, reference = load_model(args.model, args.dtype, args.base, reference=True)
    return on_base(model, reference), tokenizer


def make_generation(args, model, tokenizer, ids, configs):
    """The engine run for `generate`: HAMburger (lossy, one KV slot per group) or verify (lossless)."""
    from hamburger.engine.generate import Generation

    if args.mode == "verify":
        from hamburger.engine.verify import VerifyGeneration

        return VerifyGeneration(model, tokenizer, ids, configs, draft=args.draft)
    return Generation(model, tokenizer, ids, configs)


def generate_file(args, config) -> int:
    """Batched generation over a prompts file; one JSON object per prompt, in input order."""
    from dataclasses import replace

    from hamburger.data.io import read_prompt_file
    from hamburger.engine.prompt import encode_prompt

    rows = read_prompt_file(args.prompts_file)
    if args.batch_size < 1:
        raise HamburgerError("--batch-size must be >= 1")
    configs = [replace(config, max_new_tokens=int(r.get("max_new_tokens", config.max_new_tokens)),
                       seed=r.get("seed", config.seed)).validate() for r in rows]
    set_threads(args.threads)
    model, tokenizer = generation_model(args)
    ids = [encode_prompt(tokenizer, r["prompt"], raw=args.raw, system=args.system) for r in rows]
    for start in range(0, len(rows), args.batch_size):
        chunk = slice(start, start + args.batch_size)
        for result in make_generation(args, model, tokenizer, ids[chunk], configs[chunk]).run():
            print(json.dumps(result.to_dict()), flush=True)
    return 0


def cmd_generate(args) -> int:
    from hamburger.engine.prompt import encode_prompt
    from hamburger.cli.render import render_groups, summary_line
    from hamburger.engine.sampling import GenerationConfig

    if args.draft is not None and args.mode != "verify":
        raise HamburgerError("--draft applies to --mode verify only")
    config = GenerationConfig(max_new_tokens=args.max_new_tokens, confidence=args.confidence,
                              temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, seed=args.seed,
                              stop=args.stop or []).validate()
    if args.prompts_file:
        return generate_file(args, config)
    prompt = read_prompt(args)
    set_threads(args.threads)
    model, tokenizer = generation_model(args)
    ids = encode_prompt(tokenizer, prompt, raw=args.raw, system=args.system)
    run = make_generation(args, model, tokenizer, [ids], config)
    if args.json:
        result = run.run()[0]
        print(json.dumps(result.to_dict()))
        return 0
    color = sys.stdout.isatty() and not args.no_color and os.environ.get("NO_COLOR") is None
    if args.stream:
        from hamburger.cli.render import stream_text

        for event in run:
            print(stream_text(event, color), end="", flush=True)
        print()
        result = run.results[0]
    else:
        result = run.run()[0]
        print(render_groups(tokenizer, result, color))
    print(summary_line(result), file=sys.stderr)
    if args.html:
        from hamburger.cli.render import html_page

        Path(args.html).write_text(html_page(tokenizer, result, prompt), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def add_generate(sub) -> None:
    p = sub.add_parser("generate", help="generate text with a HAMburger model",
                       description="Generate a reply to PROMPT. The text is shown with its token groups visible "
                                   "(coloured on a terminal by the stop head's confidence, '|'-separated otherwise), "
                                   "followed by a summary line on stderr.")
    p.add_argument("prompt", nargs="?", default=None, help="the prompt ('-' or omitted with a pipe: read stdin)")
    p.add_argument("--model", default=None, help="HAMburger checkpoint folder (default: the bundled trained model)")
    p.add_argument("--base", default=None, help="where the checkpoint's base model is, if it moved")
    p.add_argument("--prompts-file", default=None,
                   help="jsonl with a 'prompt' field per line (optional 'max_new_tokens', 'seed'): generate them in "
                        "batches and print one JSON object per prompt, in input order")
    p.add_argument("--batch-size", type=int, default=8, help="prompts per batch with --prompts-file (default 8)")
    p.add_argument("--mode", choices=["hamburger", "verify"], default="hamburger",
                   help="hamburger (default): token groups share one KV slot, the output may differ from the base "
                        "model's; verify: lossless, the micro-step decoder drafts and the base model checks every "
                        "token (its greedy output exactly, or its distribution when sampling)")
    p.add_argument("--confidence", type=float, default=None,
                   help="knob in (0, 1]: a group goes on while 1 - p_stop >= confidence; higher = closer to the "
                        "base model, 1.0 = one token per forward (default: the checkpoint's default). With --mode "
                        "verify: draft while 1 - p_stop >= confidence (default 0.5)")
    p.add_argument("--draft", type=int, default=None,
                   help="with --mode verify: draft exactly this many tokens per base forward instead of asking "
                        "the stop head")
    p.add_argument("--max-new-tokens", type=int, default=256, help="most tokens to generate (default 256)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default); > 0 samples")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass in (0, 1] (default 1.0)")
    p.add_argument("--top-k", type=int, default=0, help="sample among the k most likely tokens (0 = all)")
    p.add_argument("--seed", type=int, default=None, help="seed for sampling (reproducible output)")
    p.add_argument("--stop", action="append", help="stop string (repeatable); the text ends before it")
    p.add_argument("--raw", action="store_true", help="do not apply the chat template")
    p.add_argument("--system", default=None, help="system message for the chat template")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: text, token_ids, groups, tokens, forwards, tau, kv_slots, kv_bytes, "
                        "kv_slots_ordinary, kv_bytes_ordinary, prefill_s, decode_s, decode_tok_s, finish_reason...")
    p.add_argument("--stream", action="store_true", help="print text as groups are produced")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write the group view as a standalone HTML page")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="compute dtype")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.set_defaults(func=cmd_generate)


# ---------------------------------------------------------------------------------------- export
def cmd_export(args) -> int:
    import torch

    from hamburger.core.checkpoint import load_checkpoint, read_meta, save_checkpoint

    meta = read_meta(args.model)
    model, tokenizer, info = load_checkpoint(args.model, "float32", base=args.base)
    if args.drop_lora:
        from hamburger.core.lora import remove_lora

        if not remove_lora(model.base):
            raise HamburgerError(f"{args.model} has no LoRA adapters to drop")
    extra = {k: v for k, v in meta.items() if k not in ("format", "config", "base", "base_weights", "lora")}
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[args.dtype]
    if args.default_confidence is not None:
        model.config.default_confidence = args.default_confidence
        model.config.validate()
    out = save_checkpoint(model, args.out, info, tokenizer=tokenizer, save_base=bool(meta.get("base_weights")),
                          extra=extra, weights_dtype=dtype)
    size = sum(f.stat().st_size for f in Path(out).rglob("*") if f.is_file())
    print(f"exported {args.model} -> {out} ({size / 2**20:.1f} MiB, weights in {args.dtype})")
    return 0


def add_export(sub) -> None:
    p = sub.add_parser("export", help="copy a checkpoint in a compact form for shipping",
                       description="Re-save a HAMburger checkpoint (e.g. a training run's `last/`) with only what "
                                   "inference needs: config, grafted weights, LoRA adapters if any, stored in --dtype.")
    p.add_argument("--model", required=True, help="checkpoint folder to export")
    p.add_argument("--out", required=True, help="folder to write (replaced atomically)")
    p.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"],
                   help="storage dtype of the weights (default bfloat16: half the size; loading casts back)")
    p.add_argument("--drop-lora", action="store_true",
                   help="ship the grafted modules only, on the unchanged base (leave out the LoRA adapters the "
                        "training put on it): decoding at confidence 1.0 is then exactly the base model")
    p.add_argument("--default-confidence", type=float, default=None,
                   help="set the knob used when a request gives none (choose it on a development split)")
    p.add_argument("--base", default=None, help="where the checkpoint's base model is, if it moved")
    p.set_defaults(func=cmd_export)


# ---------------------------------------------------------------------------------------- main
def add_unavailable(sub, name: str, error: Exception) -> None:
    """A verb whose module cannot be imported (e.g. a missing optional package) fails on use only."""
    verb = "eval" if name == "evaluate" else name

    def fail(args) -> int:
        raise HamburgerError(f"the `{verb}` verb is unavailable: {type(error).__name__}: {error}")

    # No option prefixes: whatever options the user gives are taken as plain words and ignored.
    p = sub.add_parser(verb, help=f"(unavailable: {type(error).__name__})", add_help=False, prefix_chars="\x00")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=fail)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hamburger", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from hamburger import __version__

    parser.add_argument("--version", action="version", version=f"hamburger {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    add_graft(sub)
    add_generate(sub)
    add_export(sub)
    for name, path in OPTIONAL_VERBS.items():
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError as e:
            if e.name == path:
                continue
            add_unavailable(sub, name, e)
            continue
        except Exception as e:  # one broken verb must not take the others down
            add_unavailable(sub, name, e)
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except HamburgerError as e:
        print(f"hamburger {args.verb}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
