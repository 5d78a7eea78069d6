"""`hamburger chat`: an interactive, multi-turn, streaming conversation with a HAMburger model.

Each reply streams group by group (shaded by the stop head's confidence on a terminal) and ends
with the summary line. `--mode` picks the decoding as in `hamburger generate` (default: verify_fold,
verify mode on a smaller KV cache; lossless verify is `--mode verify`). Each turn sends the whole conversation
again and reads on from the last turn's prompt (`--prompt-cache`; `--mode verify` from the last reply's end).
Commands: /reset forgets the conversation, /exit (or Ctrl-D) quits. With a pipe on stdin, every line is one user
turn.
"""

from __future__ import annotations

import argparse
import os
import sys

from hamburger.cli.modes import KNOB_HELP, add_mode_options, check_mode_options, generation_model, make_generation
from hamburger.cli.options import add_model, add_runtime, add_sampling, decoding_config, device_of
from hamburger.engine.prompt_cache import PROMPT_CACHE_MIB
from hamburger.errors import HamburgerError


def cmd_chat(args: argparse.Namespace) -> int:
    from hamburger.cli.render import stream_text, summary_line
    from hamburger.engine.prompt import encode_prompt
    from hamburger.engine.prompt_cache import PromptCache

    check_mode_options(args)
    if args.prompt_cache < 0:
        raise HamburgerError("--prompt-cache must be >= 0 (0: keep no prompt)")
    config = decoding_config(args)
    device = device_of(args)
    model, tokenizer = generation_model(args, device)
    interactive = sys.stdin.isatty()
    color = sys.stdout.isatty() and not args.no_color and os.environ.get("NO_COLOR") is None
    if interactive:
        print(f"hamburger chat, {args.mode} mode; /reset to start over, /exit to quit", file=sys.stderr)
    kept = PromptCache(int(args.prompt_cache * 2 ** 20)) if args.prompt_cache else None
    messages: list[dict] = [{"role": "system", "content": args.system}] if args.system else []
    while True:
        try:
            line = input("you> " if interactive else "")
        except EOFError:
            return 0
        line = line.strip()
        if not line:
            continue
        if line in ("/exit", "/quit"):
            return 0
        if line == "/reset":
            messages = messages[:1] if args.system else []
            print("(conversation reset)", file=sys.stderr)
            continue
        messages.append({"role": "user", "content": line})
        try:
            ids = encode_prompt(tokenizer, messages)
            run = make_generation(args, model, tokenizer, [ids], config, kept)
        except HamburgerError as e:
            messages.pop()
            print(f"error: {e}", file=sys.stderr)
            continue
        if interactive:
            print("bot> ", end="", flush=True)
        for event in run:
            print(stream_text(event, color), end="", flush=True)
        print(flush=True)
        result = run.results[0]
        messages.append({"role": "assistant", "content": result.text})
        print(summary_line(result), file=sys.stderr, flush=True)


def register(sub) -> None:
    p = sub.add_parser("chat", help="interactive multi-turn chat with streaming",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model(p)
    add_mode_options(p)
    add_sampling(p, what="reply", knob=KNOB_HELP)
    p.add_argument("--system", default=None, help="system message")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    p.add_argument("--prompt-cache", type=float, default=PROMPT_CACHE_MIB, metavar="MIB",
                   help="keep the KV cache of the conversation read so far, up to this many MiB: each turn reads "
                        "on from the last turn's prompt (--mode verify: from the last reply's end), with the same "
                        "reply (0: read the whole conversation every turn; default %(default)s)")
    add_runtime(p)
    p.set_defaults(func=cmd_chat)
