"""`hamburger chat`: an interactive, multi-turn, streaming conversation with a HAMburger model.

Each reply streams group by group (shaded by the stop head's confidence on a terminal) and ends
with the summary line. Commands: /reset forgets the conversation, /exit (or Ctrl-D) quits. With a
pipe on stdin, every line is one user turn.
"""

from __future__ import annotations

import argparse
import os
import sys

from hamburger.errors import HamburgerError


def cmd_chat(args) -> int:
    from hamburger.cli.main import load_model, set_threads
    from hamburger.engine.generate import Generation
    from hamburger.engine.prompt import encode_prompt
    from hamburger.cli.render import stream_text, summary_line
    from hamburger.engine.sampling import GenerationConfig

    config = GenerationConfig(max_new_tokens=args.max_new_tokens, confidence=args.confidence,
                              temperature=args.temperature, top_p=args.top_p, seed=args.seed).validate()
    set_threads(args.threads)
    model, tokenizer, info = load_model(args.model, args.dtype)
    interactive = sys.stdin.isatty()
    color = sys.stdout.isatty() and not args.no_color and os.environ.get("NO_COLOR") is None
    if interactive:
        print(f"hamburger chat on {info.spec} (confidence {config.confidence or model.config.default_confidence:g}); "
              "/reset to start over, /exit to quit", file=sys.stderr)
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
            run = Generation(model, tokenizer, [ids], config)
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
    p.add_argument("--model", default=None, help="HAMburger checkpoint folder (default: the bundled trained model)")
    p.add_argument("--confidence", type=float, default=None, help="knob in (0, 1] (default: the checkpoint's)")
    p.add_argument("--max-new-tokens", type=int, default=512, help="most tokens per reply (default 512)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass in (0, 1]")
    p.add_argument("--seed", type=int, default=None, help="sampling seed")
    p.add_argument("--system", default=None, help="system message")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="compute dtype")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.set_defaults(func=cmd_chat)
