"""The `hamburger` command: one verb per job.

    hamburger graft      put untrained grafted modules on a base model -> checkpoint
    hamburger export     re-save a checkpoint compactly for shipping
    hamburger generate   generate with a HAMburger checkpoint (default: the bundled trained model)
    hamburger chat       interactive multi-turn chat, streaming
    hamburger prompts    a prompt file from the shipped data (fixed train/dev split)
    hamburger distill    the base model answers a prompt file (resumable)
    hamburger segment    cut the answers into token groups by the base's entropy: a training dataset
    hamburger train      train a HAMburger model on a segmented dataset
    hamburger bench      speed next to the base model and its peers
    hamburger eval       quality next to the base model, at every knob
    hamburger calibrate  set a checkpoint's default knob by rule on dev prompts
    hamburger heads      choose a checkpoint's full heads (verify_fold) by scoring its base's heads
    hamburger serve      an OpenAI-compatible HTTP server

Every verb's code is in hamburger/cli/VERB.py (export with graft, calibrate with eval) and calls a typed
library function, so `hamburger VERB` and Python do the same thing. `python -m hamburger.cli VERB` is the
same command (what torchrun launches).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from hamburger.errors import HamburgerError

# The verb table: verb -> its module under hamburger/cli/, whose register(sub) adds it (in this order).
# The modules are imported one by one, so a verb whose module cannot be imported (an optional package
# missing) is listed as unavailable and fails on use only; the others work.
VERBS = {
    "graft": "graft", "export": "graft", "generate": "generate", "chat": "chat",
    "prompts": "prompts", "distill": "distill", "segment": "segment", "train": "train",
    "bench": "bench", "eval": "eval", "calibrate": "eval", "heads": "heads", "serve": "serve",
}


def add_unavailable(sub, verb: str, error: Exception) -> None:
    """A verb whose module cannot be imported fails on use only, with one line saying why."""

    def fail(args) -> int:
        raise HamburgerError(f"the `{verb}` verb is unavailable: {type(error).__name__}: {error}")

    # No option prefixes: whatever options the user gives are taken as plain words and ignored.
    p = sub.add_parser(verb, help=f"(unavailable: {type(error).__name__})", add_help=False, prefix_chars="\x00")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=fail)


def build_parser() -> argparse.ArgumentParser:
    from hamburger import __version__

    parser = argparse.ArgumentParser(prog="hamburger", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hamburger {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in dict.fromkeys(VERBS.values()):
        try:
            module = importlib.import_module(f"hamburger.cli.{name}")
        except Exception as e:  # one broken verb must not take the others down
            for verb in (v for v, m in VERBS.items() if m == name):
                add_unavailable(sub, verb, e)
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
