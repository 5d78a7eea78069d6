"""`hamburger prompts`: a prompt file from the shipped data, with the fixed train/dev split."""

from __future__ import annotations

import argparse

from hamburger.data import prompts as library
from hamburger.data.prompts import SOURCES


def cmd_prompts(args: argparse.Namespace) -> int:
    """Write a prompt file and print how many rows per source."""
    from hamburger.data.io import write_jsonl
    from hamburger.data.prompts import build_prompts

    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    rows = build_prompts(sources, args.split, args.limit, args.seed, args.data)
    write_jsonl(rows, args.out)
    counts = {s: sum(r["source"] == s for r in rows) for s in dict.fromkeys(sources)}
    print(f"wrote {len(rows)} prompts ({args.split}) to {args.out}: "
          + ", ".join(f"{s} {n}" for s, n in counts.items()))
    return 0


def register(sub) -> None:
    p = sub.add_parser("prompts", help="build a prompt file from the shipped data (fixed train/dev split)",
                       description=library.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sources", default=",".join(SOURCES), help="comma-separated: " + ", ".join(SOURCES))
    p.add_argument("--split", default="train", choices=["train", "dev", "all"])
    p.add_argument("--limit", type=int, default=None, help="keep the first N prompts after interleaving")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed")
    p.add_argument("--data", default=None, help="data root (default: $HAMBURGER_DATA or the package's hamburger/data)")
    p.add_argument("--out", required=True, help="output .jsonl")
    p.set_defaults(func=cmd_prompts)
