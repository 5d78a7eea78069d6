"""`hamburger segment`: cut responses into token groups by the base model's entropy (a training dataset)."""

from __future__ import annotations

import argparse

from hamburger.cli.options import add_base, add_runtime, device_of
from hamburger.data import segment as library
from hamburger.data.segment import ENTROPY_SOURCES, STRATEGIES


def cmd_segment(args: argparse.Namespace) -> int:
    from hamburger.data.segment import SegmentInput, SegmentSettings, segment

    device = device_of(args)
    settings = SegmentSettings(args.strategy, args.max_steps, args.abs_threshold, args.ratio, args.sliding_p,
                               args.small_group_p)
    inputs = SegmentInput(args.prompt_field, args.response_field, args.id_field, args.system, args.max_length,
                          args.long)
    segment(args.out, settings, data=args.data, from_dataset=args.from_dataset, base=args.base, inputs=inputs,
            batch_size=args.batch_size, limit=args.limit, dtype=args.dtype, device=device,
            entropies=args.entropies)
    return 0


def register(sub) -> None:
    p = sub.add_parser("segment", help="cut responses into token groups by base-model entropy (dataset)",
                       description=library.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_base(p)
    p.add_argument("--data", default=None, help="input .jsonl (distill output, or any prompt/response file)")
    p.add_argument("--from-dataset", default=None, help="re-cut an existing dataset (no model forward)")
    p.add_argument("--out", required=True, help="output dataset .jsonl (appended; rerun to resume)")
    p.add_argument("--prompt-field", default="prompt", help="the prompt's field (default prompt)")
    p.add_argument("--response-field", default="response", help="the response's field (default response)")
    p.add_argument("--id-field", default="id", help="unique row id (rows without it get '<file stem>:<line>')")
    p.add_argument("--system", default=None, help="system message (default: the one distill used, if any)")
    p.add_argument("--strategy", default="decreasing_v2", help="one of " + ", ".join(STRATEGIES))
    p.add_argument("--max-steps", type=int, default=4, help="largest group (default 4)")
    p.add_argument("--abs-threshold", type=float, default=0.05, help="decreasing_v2: always extend below (nats)")
    p.add_argument("--ratio", type=float, default=0.3, help="decreasing(_v2): extend below ratio x group entropy")
    p.add_argument("--sliding-p", type=float, default=0.7, help="sliding: threshold H(p)")
    p.add_argument("--small-group-p", type=float, default=0.95, help="small_group: threshold H(p)")
    p.add_argument("--batch-size", type=int, default=8, help="rows per base forward (default 8)")
    p.add_argument("--max-length", type=int, default=1024, help="max prompt + response tokens")
    p.add_argument("--long", choices=["drop", "truncate"], default="drop", help="what to do with longer rows")
    p.add_argument("--limit", type=int, default=None, help="use the first N rows of --data")
    p.add_argument("--entropies", choices=ENTROPY_SOURCES, default="same-dtype",
                   help="the entropies distill recorded with its answers, which spare the base's forward over them: "
                        "taken where distill ran in --dtype (same-dtype, the default), in any dtype (recorded), or "
                        "never (recompute)")
    add_runtime(p, device_note="; for --data")
    p.set_defaults(func=cmd_segment)
