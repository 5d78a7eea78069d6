"""`hamburger generate`: one reply with its token groups visible, or a prompts file in batches (JSON lines)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hamburger.cli import options
from hamburger.cli.options import add_model, add_runtime, add_sampling, decoding_config, device_of
from hamburger.engine.folding import DEFAULT_FOLD
from hamburger.engine.lookup import LOOKUP_TOKENS
from hamburger.engine.verify import VERIFY_CONFIDENCE
from hamburger.errors import HamburgerError

KNOB_HELP = ("in the verify modes (verify is the default): the micro-step decoder drafts while the stop head's 1 - p_stop >= "
             f"confidence (default {VERIFY_CONFIDENCE}); with --mode hamburger: " + options.KNOB_HELP)
MODES = ("verify", "verify_fold", "hamburger")  # the default first


def read_prompt(args: argparse.Namespace) -> str:
    if args.prompt == "-" or (args.prompt is None and not sys.stdin.isatty()):
        return sys.stdin.read()
    if args.prompt is None:
        raise HamburgerError("give a PROMPT (or '-' to read it from stdin)")
    return args.prompt


def folding_spec(args: argparse.Namespace) -> str | None:
    """The folding of this run: --fold, else `DEFAULT_FOLD` in mode verify_fold; None: no folding."""
    return args.fold or (DEFAULT_FOLD if args.mode == "verify_fold" else None)


def generation_model(args: argparse.Namespace, device: str):
    """(model, tokenizer) for `generate`: in lossless verify mode the grafted modules sit on the checkpoint's
    unchanged base (its LoRA adapters or fine-tuned base left out), so the output is that base's own; folding (mode
    verify_fold, or --fold) keeps the checkpoint's adapters, which read the folded slots."""
    from hamburger.core.loading import load_model

    if args.mode != "verify" or folding_spec(args):
        return load_model(args.model, args.dtype, args.base, device=device)[:2]
    from hamburger.engine.verify import on_base

    model, tokenizer, _, reference = load_model(args.model, args.dtype, args.base, reference=True, device=device)
    return on_base(model, reference), tokenizer


def make_generation(args: argparse.Namespace, model, tokenizer, ids, configs):
    """The engine run for `generate`: verify mode, folding (verify_fold) or lossless (verify), or HAMburger (lossy,
    one KV slot per group)."""
    from hamburger.engine.generate import Generation

    if args.mode != "hamburger":
        from hamburger.engine.folding import parse_folding
        from hamburger.engine.lookup import PromptLookup
        from hamburger.engine.verify import VerifyGeneration

        lookup = LOOKUP_TOKENS if args.lookup is None else args.lookup
        return VerifyGeneration(model, tokenizer, ids, configs, draft=args.draft, draft_vocab=model.draft_vocab,
                                fold=parse_folding(spec) if (spec := folding_spec(args)) else None,
                                lookup=PromptLookup(tokens=lookup) if lookup else None)
    return Generation(model, tokenizer, ids, configs)


def generate_file(args: argparse.Namespace, config, device: str) -> int:
    """Batched generation over a prompts file; one JSON object per prompt, in input order."""
    from dataclasses import replace

    from hamburger.data.io import read_prompt_file
    from hamburger.engine.prompt import encode_prompt

    rows = read_prompt_file(args.prompts_file)
    if args.batch_size < 1:
        raise HamburgerError("--batch-size must be >= 1")
    configs = [replace(config, max_new_tokens=int(r.get("max_new_tokens", config.max_new_tokens)),
                       seed=r.get("seed", config.seed)).validate() for r in rows]
    model, tokenizer = generation_model(args, device)
    ids = [encode_prompt(tokenizer, r["prompt"], raw=args.raw, system=args.system) for r in rows]
    for start in range(0, len(rows), args.batch_size):
        chunk = slice(start, start + args.batch_size)
        for result in make_generation(args, model, tokenizer, ids[chunk], configs[chunk]).run():
            print(json.dumps(result.to_dict()), flush=True)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from hamburger.cli.render import render_groups, summary_line
    from hamburger.engine.prompt import encode_prompt

    for flag, value in (("--draft", args.draft), ("--fold", args.fold), ("--lookup", args.lookup)):
        if value is not None and args.mode == "hamburger":
            raise HamburgerError(f"{flag} applies to the verify modes only (verify, the default, and verify_fold)")
    config = decoding_config(args)
    device = device_of(args)
    if args.prompts_file:
        return generate_file(args, config, device)
    prompt = read_prompt(args)
    model, tokenizer = generation_model(args, device)
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


def register(sub) -> None:
    p = sub.add_parser("generate", help="generate text with a HAMburger model",
                       description="Generate a reply to PROMPT. The text is shown with its token groups visible "
                                   "(coloured on a terminal by the stop head's confidence, '|'-separated otherwise), "
                                   "followed by a summary line on stderr.")
    p.add_argument("prompt", nargs="?", default=None, help="the prompt ('-' or omitted with a pipe: read stdin)")
    add_model(p)
    p.add_argument("--prompts-file", default=None,
                   help="jsonl with a 'prompt' field per line (optional 'max_new_tokens', 'seed'): generate them in "
                        "batches and print one JSON object per prompt, in input order")
    p.add_argument("--batch-size", type=int, default=8, help="prompts per batch with --prompts-file (default 8)")
    p.add_argument("--mode", choices=MODES, default=MODES[0],
                   help="verify (default): lossless, the micro-step decoder and prompt lookup draft and the base "
                        "model checks every token (its greedy output exactly, or its distribution when sampling; one "
                        "KV slot per token). verify_fold: the same, but older answer tokens fold into one KV slot per "
                        "group (--fold; the paper's KV saving): every token is still the base's choice, reading "
                        "folded history, within the base's quality bands on the dev prompts but not token for token "
                        "its output. hamburger: the paper's decoding, token groups from the micro-step decoder share "
                        "one KV slot, the confidence knob trades fidelity for speed")
    p.add_argument("--draft", type=int, default=None,
                   help="in the verify modes: draft exactly this many tokens per base forward instead of asking "
                        "the stop head")
    p.add_argument("--fold", default=None, metavar="GROUPS:WINDOW",
                   help="in the verify modes: fold older answer tokens into one KV slot per group once WINDOW tokens "
                        "follow them; GROUPS is segments (the base's own entropy cut, as training data is cut) or "
                        "forwards (the tokens one base forward kept), e.g. segments:8 (verify_fold's default: "
                        f"{DEFAULT_FOLD}). Every token is still the base model's choice, but reading folded history it "
                        "is no longer exactly the base's output")
    p.add_argument("--lookup", type=int, default=None, metavar="N",
                   help="in the verify modes: where the text's last 2-3 tokens occurred before (in the prompt or the "
                        "answer), draft the up to N tokens that followed them (prompt lookup; free: no forward makes "
                        "them) instead of asking the micro-step decoder; the base still checks every token "
                        f"(default {LOOKUP_TOKENS}; 0: the micro-step decoder drafts alone)")
    add_sampling(p, knob=KNOB_HELP)
    p.add_argument("--raw", action="store_true", help="do not apply the chat template")
    p.add_argument("--system", default=None, help="system message for the chat template")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: text, token_ids, groups, tokens, forwards, tau, kv_slots, kv_bytes, "
                        "kv_slots_ordinary, kv_bytes_ordinary, prefill_s, decode_s, decode_tok_s, finish_reason...")
    p.add_argument("--stream", action="store_true", help="print text as groups are produced")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write the group view as a standalone HTML page")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    add_runtime(p)
    p.set_defaults(func=cmd_generate)
