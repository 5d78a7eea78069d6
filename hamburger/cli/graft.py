"""`hamburger graft` (an untrained checkpoint on a base model) and `hamburger export` (a checkpoint re-saved
compactly for shipping)."""

from __future__ import annotations

import argparse

from hamburger.cli.options import DTYPES, add_base, add_model
from hamburger.core.config import GATES
from hamburger.engine.folding import READER_FOLD
from hamburger.errors import HamburgerError


def cmd_graft(args: argparse.Namespace) -> int:
    from hamburger.core.loading import set_threads
    from hamburger.core.checkpoint import graft
    from hamburger.core.config import HamburgerConfig

    set_threads(args.threads)
    config = HamburgerConfig(max_steps=args.max_steps, decoder_layers=args.decoder_layers,
                             decoder_init=args.decoder_init, num_taps=args.num_taps,
                             default_confidence=args.default_confidence)
    model, out, info = graft(args.out, args.base, config)
    n = sum(p.numel() for p in model.grafted_parameters())
    print(f"grafted {n / 1e6:.2f}M parameters (taps after layers {[t + 1 for t in model.config.tap_layers]}, "
          f"{model.config.decoder_layers} decoder layers, max_steps {model.config.max_steps}) on {info.spec} -> {out}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from hamburger.core.checkpoint import add_fold_reader, export

    if args.fold_reader_sampled_only and not args.fold_reader:
        raise HamburgerError("--fold-reader-sampled-only needs --fold-reader")
    out = export(args.model, args.out, dtype=args.dtype, drop_lora=args.drop_lora,
                 default_confidence=args.default_confidence, base=args.base, gate=args.gate,
                 prefilter=args.prefilter, single_tail=args.single_tail, fold_tail=args.fold_tail,
                 micro_lookup=args.micro_lookup, micro_lookup_continues=args.micro_lookup_continues)
    if args.fold_reader:
        add_fold_reader(out, args.fold_reader, args.fold_reader_fold, args.dtype, args.fold_reader_sampled_only)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"exported {args.model} -> {out} ({size / 2**20:.1f} MiB, weights in {args.dtype})")
    return 0


def register(sub) -> None:
    p = sub.add_parser("graft", help="make an untrained HAMburger checkpoint on a base model",
                       description="Graft a compositional embedder, micro-step decoder and stop head onto a base "
                                   "causal LM and save the (untrained) checkpoint. Train it with `hamburger train`.")
    add_base(p)
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

    p = sub.add_parser("export", help="copy a checkpoint in a compact form for shipping",
                       description="Re-save a HAMburger checkpoint (e.g. a training run's `last/`) with only what "
                                   "inference needs: config, grafted weights, LoRA adapters if any, stored in --dtype.")
    add_model(p, required=True, help="checkpoint folder to export")
    p.add_argument("--out", required=True, help="folder to write (replaced atomically)")
    p.add_argument("--dtype", default="bfloat16", choices=DTYPES,
                   help="storage dtype of the weights (default bfloat16: half the size; loading casts back)")
    p.add_argument("--drop-lora", action="store_true",
                   help="ship the grafted modules only, on the unchanged base (leave out the LoRA adapters the "
                        "training put on it): decoding at confidence 1.0 is then exactly the base model")
    p.add_argument("--default-confidence", type=float, default=None,
                   help="set the knob used when a request gives none (choose it on a development split)")
    p.add_argument("--gate", choices=GATES, default=None,
                   help="what the knob thresholds for each micro token: stop_head (the stop head's 1 - p_stop after "
                        "the previous token) or token_prob (the micro-step decoder's probability of the token itself; "
                        "one more micro step per group). Default: keep the checkpoint's")
    p.add_argument("--prefilter", type=float, default=None,
                   help="gate token_prob only: ask the micro-step decoder for a group's next token only while the stop "
                        "head's 1 - p_stop is >= this times the knob, in [0, 1] (0: always ask). Saves the micro step "
                        "where the stop head already knows the group ends; can only turn merges down. Default: keep "
                        "the checkpoint's")
    p.add_argument("--micro-lookup", type=float, default=None,
                   help="mode hamburger, greedy rows: a micro step takes the answer's own continuation (the token "
                        "after the latest earlier occurrence of its last 3 tokens) instead of the micro-step decoder's "
                        "top token where the decoder gives it at least this probability, in [0, 1]; such a token "
                        "passes the token_prob gate (0: never). Default: keep the checkpoint's")
    p.add_argument("--micro-lookup-continues", action=argparse.BooleanOptionalAction, default=None,
                   help="with --micro-lookup: a group the stop head would end goes on where the answer has such a "
                        "continuation, and only that copy may join it. Default: keep the checkpoint's")
    p.add_argument("--single-tail", type=int, default=None,
                   help="feed the last N tokens of every group in KV slots of their own, after one merged slot of the "
                        "rest, in the same forward (0: one slot per group, the paper's layout; 1: the next group is "
                        "read off a single token, which the base reads better, for up to one more slot per group). "
                        "Default: keep the checkpoint's (the layout it was trained in)")
    p.add_argument("--fold-tail", type=int, default=None, metavar="D",
                   help="with a single tail: D steps later, take a group fed as a merged head and a tail out of the "
                        "KV cache and feed it again as one merged slot, in that step's forward, so the cache holds one "
                        "slot per group but the last D (each group is still read off a single token); 0: never. "
                        "Default: keep the checkpoint's")
    p.add_argument("--fold-reader", default=None, metavar="CKPT",
                   help="also ship CKPT's LoRA adapters (trained with --set verify_fold=SPEC --set "
                        "lora_scope=after_fold, on the same base) as the export's fold reader: verify_fold's "
                        "token-keeping folds then decode with them, on at every slot from a row's first fold on, in "
                        "place of the export's own adapters (lossless verify and mode hamburger are unchanged)")
    p.add_argument("--fold-reader-fold", default=READER_FOLD, metavar="SPEC",
                   help=f"the --fold spec the fold reader was trained for, recorded beside it (default {READER_FOLD}, "
                        "the token-dropping fold the default model's reader was trained for)")
    p.add_argument("--fold-reader-sampled-only", action="store_true",
                   help="the fold reader acts on sampling rows only (temperature > 0); greedy rows read their folds "
                        "with the base alone (for a reader judged better for sampled decoding only)")
    p.set_defaults(func=cmd_export)
