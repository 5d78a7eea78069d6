"""`hamburger distill`: the base model writes a response to every prompt of a prompt file (resumable)."""

from __future__ import annotations

import argparse

from hamburger.cli.options import add_base, add_runtime, add_sampling, device_of
from hamburger.data import distill as library

# float16 too: distillation runs the base alone (`data/answers.py`), and float16 is the fast dtype of GPUs without
# bfloat16; every other verb runs the grafted modules, which are tested in float32 and bfloat16 only.
DISTILL_DTYPES = ("float32", "bfloat16", "float16")


def cmd_distill(args: argparse.Namespace) -> int:
    from hamburger.data.distill import DistillSettings, distill

    device = device_of(args)
    settings = DistillSettings(args.max_new_tokens, args.temperature, args.top_p, args.seed, args.system,
                               args.dtype, args.prompt_field, args.samples, args.sample_temperature, args.sample_top_p)
    distill(args.prompts, args.out, settings, base=args.base, id_field=args.id_field, batch_size=args.batch_size,
            limit=args.limit, device=device, entropies=not args.no_entropies)
    return 0


def register(sub) -> None:
    p = sub.add_parser("distill", help="have the base model write responses to a prompt file (resumable)",
                       description=library.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_base(p)
    p.add_argument("--prompts", required=True, help="prompt .jsonl (e.g. from `hamburger prompts`)")
    p.add_argument("--out", required=True, help="output .jsonl (appended; rerun to resume)")
    p.add_argument("--prompt-field", default="prompt", help="the prompt's field (default prompt)")
    p.add_argument("--id-field", default="id", help="unique row id (rows without it get '<file stem>:<line>')")
    p.add_argument("--batch-size", type=int, default=16,
                   help="rows decoded together (default 16): as one ends, the next prompt takes its place")
    add_sampling(p, what="response", knob=None, extra=False, seed=0)
    p.add_argument("--samples", type=int, default=1, metavar="N",
                   help="responses per prompt (default 1): the main one (--temperature, greedy by default; id ID) "
                        "plus N-1 sampled ones at --sample-temperature/--sample-top-p (ids ID#s1 .. ID#s{N-1}, "
                        "field `sample`), each seeded by --seed and its id")
    p.add_argument("--sample-temperature", type=float, default=1.0,
                   help="temperature of the extra samples, > 0 (default 1.0: the base's own distribution)")
    p.add_argument("--sample-top-p", type=float, default=1.0,
                   help="nucleus mass of the extra samples in (0, 1] (default 1.0)")
    p.add_argument("--limit", type=int, default=None, help="use the first N prompts of the file")
    p.add_argument("--system", default=None, help="system message (default: the chat template's own)")
    p.add_argument("--no-entropies", action="store_true",
                   help="leave out each token's entropy and probability (fields entropies, token_probs), which "
                        "`segment` otherwise cuts by without running the base over the answers again")
    add_runtime(p, dtypes=DISTILL_DTYPES, device_note="; not part of the resume settings, so a run may "
                "continue on another device")
    p.set_defaults(func=cmd_distill)
