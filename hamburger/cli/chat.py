"""`hamburger chat`: an interactive, multi-turn, streaming conversation with a HAMburger model.

Each reply streams group by group (shaded by the stop head's confidence on a terminal) and ends
with the summary line. `--mode` picks the decoding as in `hamburger generate` (default: verify_fold,
verify mode on a smaller KV cache; lossless verify is `--mode verify`). Each turn sends the whole conversation
again and reads on from the last turn's prompt (`--prompt-cache`; `--mode verify` from the last reply's end). A
conversation that outgrows the model's context, with room left for a reply (--max-new-tokens), loses its oldest
exchanges after the system message, with a notice. Commands: /undo takes back the last exchange, /retry asks for the
last reply again (sampled, a new draw unless --seed), /system TEXT sets a new system message (alone: shows it),
/save FILE writes the conversation (JSON, OpenAI's messages), /load FILE (or --load) goes on from one, /reset forgets
it, /help lists them, /exit (or Ctrl-D) quits. Ctrl-C stops a reply where it is (what was shown stays in the
conversation). With a pipe on stdin, every line is one user turn.
"""

from __future__ import annotations

import argparse
import os
import sys

from hamburger.cli.modes import KNOB_HELP, add_mode_options, check_mode_options, generation_model, make_generation
from hamburger.cli.options import (add_model, add_runtime, add_sampling, add_template_kwargs, decoding_config,
                                   device_of, templating)
from hamburger.engine.prompt_cache import PROMPT_CACHE_MIB
from hamburger.errors import HamburgerError


COMMANDS = ("/undo: take back the last exchange; /retry: the last reply again; /system TEXT: a new system message "
            "(alone: the one in force); /save FILE, /load FILE: the conversation as JSON (OpenAI's messages); /reset: "
            "start over; /exit: quit")


def cmd_chat(args: argparse.Namespace) -> int:
    from hamburger.cli.render import summary_line
    from hamburger.engine.prompt import encode_prompt

    check_mode_options(args)
    if args.prompt_cache < 0:
        raise HamburgerError("--prompt-cache must be >= 0 (0: keep no prompt)")
    config = decoding_config(args)
    loaded = read_conversation(args.load) if args.load else None  # (a bad file: one line, before the model loads)
    device = device_of(args)
    model, tokenizer = generation_model(args, device)
    interactive = sys.stdin.isatty()
    color = sys.stdout.isatty() and not args.no_color and os.environ.get("NO_COLOR") is None
    if interactive:
        print(f"hamburger chat, {args.mode} mode; /help for commands, /exit to quit", file=sys.stderr)
    kept = new_cache(args)
    start = [{"role": "system", "content": args.system}] if args.system else []
    messages = list(start) if loaded is None else loaded
    while True:
        try:
            line = input("you> " if interactive else "").strip()
        except EOFError:
            return 0
        except KeyboardInterrupt:
            if not interactive:
                raise
            print("\n(Ctrl-D or /exit quits)", file=sys.stderr)
            continue
        if not line:
            continue
        if line in ("/exit", "/quit"):
            return 0
        if line.startswith("/"):
            messages, line = command(line, messages, start)
            if line is None:
                continue
        messages.append({"role": "user", "content": line})
        try:
            encode = lambda m: encode_prompt(tokenizer, m, templating=templating(args))  # noqa: E731
            fit, ids, dropped = fitted(messages, encode, model.context_length - config.max_new_tokens)
            run = make_generation(args, model, tokenizer, [ids], config, kept)
        except HamburgerError as e:
            messages.pop()
            print(f"error: {e}", file=sys.stderr)
            continue
        if dropped:
            print(f"(the conversation outgrew the model's context of {model.context_length} tokens with room for a "
                  f"reply: its {dropped} oldest messages are dropped)", file=sys.stderr)
            messages = fit
        if interactive:
            print("bot> ", end="", flush=True)
        reply, result = stream_reply(run, color)
        messages.append({"role": "assistant", "content": reply})
        if result is None:  # stopped: what the cache holds of this turn may be half written
            kept = new_cache(args)
            print("(stopped)", file=sys.stderr, flush=True)
        else:
            print(summary_line(result), file=sys.stderr, flush=True)


def fitted(messages: list[dict], encode, room: int) -> tuple[list[dict], list[int], int]:
    """The conversation as it fits ``room`` prompt tokens (the context less a reply's --max-new-tokens): its oldest
    exchanges after the system messages dropped until its prompt does, or only the last turn is left. Returns (the
    messages, their prompt's ids, how many were dropped)."""
    ids, first = encode(messages), next((i for i, m in enumerate(messages) if m["role"] != "system"), 0)
    kept = messages
    while len(ids) > room and len(kept) - first > 1:
        after = next((i for i in range(first + 1, len(kept)) if kept[i]["role"] == "user"), len(kept) - 1)
        kept = kept[:first] + kept[after:]
        ids = encode(kept)
    return kept, ids, len(messages) - len(kept)


def new_cache(args: argparse.Namespace):
    """The conversation's `PromptCache` (None with --prompt-cache 0)."""
    from hamburger.engine.prompt_cache import PromptCache

    return PromptCache(int(args.prompt_cache * 2 ** 20)) if args.prompt_cache else None


def stream_reply(run, color: bool):
    """Print a reply as it comes -> (its text, its result); Ctrl-C stops it: (the text shown, None)."""
    from hamburger.cli.render import stream_text

    events, shown = iter(run), []
    try:
        for event in events:
            print(stream_text(event, color), end="", flush=True)
            shown.append(event.text)
    except KeyboardInterrupt:
        events.close()
        print(flush=True)
        return "".join(shown), None
    print(flush=True)
    return run.results[0].text, run.results[0]


def command(line: str, messages: list[dict], start: list[dict]) -> tuple[list[dict], str | None]:
    """A chat command -> (the conversation after it, a user turn to answer now or None)."""
    import json

    name, _, arg = line.partition(" ")
    arg = arg.strip()
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if name in ("/undo", "/retry") and last_user is None:
        print("(nothing to take back yet)", file=sys.stderr)
    elif name == "/undo":
        print("(took back the last exchange)", file=sys.stderr)
        return messages[:last_user], None
    elif name == "/retry":
        return messages[:last_user], messages[last_user]["content"]
    elif name == "/reset":
        print("(conversation reset)", file=sys.stderr)
        return list(start), None
    elif name == "/system":  # (a new system message from the next reply on; alone: the one in force)
        head = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
        if not arg:
            shown = " / ".join(m["content"] for m in messages[:head])
            print(f"(system message: {shown})" if head else "(no system message)", file=sys.stderr)
            return messages, None
        print("(system message set)", file=sys.stderr)
        return [{"role": "system", "content": arg}] + messages[head:], None
    elif name in ("/save", "/load") and not arg:
        print(f"(usage: {name} FILE)", file=sys.stderr)
    elif name == "/save":
        try:
            with open(arg, "w", encoding="utf-8") as f:
                json.dump(messages, f, ensure_ascii=False, indent=1)
            print(f"(saved {len(messages)} messages to {arg})", file=sys.stderr)
        except OSError as e:
            print(f"error: cannot write {arg}: {e}", file=sys.stderr)
    elif name == "/load":
        try:
            loaded = read_conversation(arg)
            print(f"(loaded {len(loaded)} messages from {arg})", file=sys.stderr)
            return loaded, None
        except HamburgerError as e:
            print(f"error: {e}", file=sys.stderr)
    else:
        print(COMMANDS if name == "/help" else f"(unknown command {name}; {COMMANDS})", file=sys.stderr)
    return messages, None


def read_conversation(path: str) -> list[dict]:
    """A conversation /save wrote (a JSON list of {"role", "content"} messages); a clear error otherwise."""
    import json

    from hamburger.engine.prompt import conversation_error

    try:
        with open(path, encoding="utf-8") as f:
            messages = json.load(f)
    except (OSError, ValueError) as e:
        raise HamburgerError(f"cannot read a conversation from {path}: {e}") from None
    if messages != [] and (why := conversation_error(messages)):
        raise HamburgerError(f"{path} is not a conversation: {why}")
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def register(sub) -> None:
    p = sub.add_parser("chat", help="interactive multi-turn chat with streaming",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model(p)
    add_mode_options(p)
    add_sampling(p, what="reply", knob=KNOB_HELP)
    p.add_argument("--system", default=None, help="system message")
    add_template_kwargs(p)
    p.add_argument("--load", default=None, metavar="FILE",
                   help="go on from a conversation /save wrote (JSON, OpenAI's messages; --system is then its own)")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    p.add_argument("--prompt-cache", type=float, default=PROMPT_CACHE_MIB, metavar="MIB",
                   help="keep the KV cache of the conversation read so far, up to this many MiB: each turn reads "
                        "on from the last turn's prompt (--mode verify: from the last reply's end), with the same "
                        "reply (0: read the whole conversation every turn; default %(default)s)")
    add_runtime(p)
    p.set_defaults(func=cmd_chat)
