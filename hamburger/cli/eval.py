"""`hamburger eval` (quality next to the base model, every knob) and `hamburger calibrate` (the default knob
chosen by rule on the dev prompts)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hamburger.cli.options import add_confidence_sweep, add_max_new_tokens, add_model, add_runtime, device_of, names
from hamburger.engine.full_heads import parse_full_heads
from hamburger.engine.lookup import LOOKUP_TOKENS
from hamburger.engine.verify import VERIFY_CONFIDENCE
from hamburger.eval import calibrate as calibrate_library
from hamburger.eval import run as eval_library
from hamburger.eval.run import SAMPLE_CHOICES, TASKS


def cmd_eval(args: argparse.Namespace) -> int:
    from hamburger.eval.paired import parse_bands
    from hamburger.eval.run import Endpoint, evaluate

    bands = parse_bands(args.bands)
    device = device_of(args)
    endpoint = Endpoint(args.endpoint, args.api_key, args.endpoint_model) if args.endpoint else None
    summary = evaluate(args.out, args.tasks, args.confidence, args.model, limit=args.limit,
                       max_new_tokens=args.max_new_tokens, gsm8k_file=args.gsm8k_file, chat_file=args.chat_file,
                       timeout=args.timeout, batch_size=args.batch_size, endpoint=endpoint, verify=args.verify,
                       base_sampled=not args.no_base_sampled, bands=bands, dtype=args.dtype, device=device,
                       base=args.base, verify_fold=args.verify_fold, verify_confidence=args.verify_confidence,
                       verify_lookup=args.verify_lookup, reuse_base=args.reuse_base, sample=args.sample,
                       verify_ngrams=args.verify_ngrams, draws=args.draws, full_heads=args.full_heads)
    print(summary.read_text())
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from hamburger.core.checkpoint import CONFIG_FILE
    from hamburger.eval.calibrate import calibrate
    from hamburger.eval.paired import parse_bands

    bands = parse_bands(args.bands)
    device = device_of(args)
    knob, record = calibrate(args.model, args.tasks, args.confidence, results=args.results, limit=args.limit,
                             max_new_tokens=args.max_new_tokens, batch_size=args.batch_size, rule=args.rule,
                             bands=bands, out=args.out, dry_run=args.dry_run, dtype=args.dtype, device=device,
                             base=args.base)
    for k, ok in record["knobs"].items():
        print(f"knob {k}: {'every difference inside its band' if ok else 'a difference outside its band'} "
              f"(rule: {args.rule})")
    if args.dry_run:
        print(f"chosen default knob {knob:g} (dry run: {args.model} left unchanged)")
    else:
        print(f"chosen default knob {knob:g} -> {Path(args.model) / CONFIG_FILE}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("eval", help="quality of HAMburger vs its base model at each confidence",
                       description=eval_library.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model(p)
    p.add_argument("--tasks", type=names, default="gsm8k,humaneval,chat", help=f"comma list of {', '.join(TASKS)}")
    add_confidence_sweep(p, "0.5,0.7,0.8,0.9", "comma list of knob values (default 0.5,0.7,0.8,0.9)")
    p.add_argument("--limit", type=int, default=50, help="examples per task (default 50)")
    add_max_new_tokens(p)
    p.add_argument("--gsm8k-file", default=None, help="jsonl in GSM8K format (question, answer ending '#### n')")
    p.add_argument("--chat-file", default=None,
                   help="jsonl with a 'prompt' field per line for the chat task (default: fixed dev prompts)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per HumanEval execution (default 10)")
    p.add_argument("--batch-size", type=int, default=4, help="prompts generated together (default 4)")
    p.add_argument("--endpoint", default=None,
                   help="also evaluate an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1, `hamburger serve`) "
                        "on the same prompts, greedy; its tau comes from the usage extension when present")
    p.add_argument("--api-key", default=None, help="API key for --endpoint")
    p.add_argument("--endpoint-model", default="hamburger", help="model name sent to --endpoint")
    p.add_argument("--verify", action="store_true",
                   help="also evaluate lossless verify mode (the MSD drafts, the unchanged base verifies; greedy: "
                        "the base's own answers, with tau = tokens per base forward)")
    p.add_argument("--verify-fold", default=None, metavar="GROUPS:WINDOW[:FIELD...]",
                   help="also evaluate verify mode with folding on the checkpoint itself (its adapters on): older "
                        "answer tokens fold into one KV slot per group once WINDOW tokens follow them, GROUPS "
                        "segments (the base's entropy cut) or forwards; optional SHARE, KEEP (merged, last or first), "
                        "steps=N and p=P, e.g. segments:8 or segments:64:first:steps=8:p=0.7 (see generate --fold)")
    p.add_argument("--full-heads", type=parse_full_heads, default=None, metavar="LAYER:HEAD,...",
                   help="--verify-fold: these key/value heads of the base (LAYER:HEAD pairs, or none) keep every slot "
                        "the fold takes out, the others read the fold (default: the checkpoint's own full heads)")
    p.add_argument("--verify-confidence", type=float, default=None,
                   help="--verify and --verify-fold draft while the stop head's 1 - p_stop >= this (default "
                        f"{VERIFY_CONFIDENCE}; "
                        "lower drafts more: more tokens per forward, more positions per forward)")
    p.add_argument("--verify-lookup", type=int, default=LOOKUP_TOKENS, metavar="N",
                   help="--verify and --verify-fold also draft by prompt lookup: up to N tokens that followed an "
                        "earlier occurrence of the text's last 2-3 tokens (default %(default)s; 0: the MSD drafts "
                        "alone)")
    p.add_argument("--verify-ngrams", type=int, default=None, metavar="N",
                   help="--verify and --verify-fold also draft greedy answers, where prompt lookup finds no match, "
                        "up to N tokens from the checkpoint's n-gram table (default: the table's own, 10, when the "
                        "checkpoint has one; 0: none)")
    p.add_argument("--sample", nargs="?", const="also", default=None, choices=SAMPLE_CHOICES,
                   help="also decode every HAMburger method (each knob, --verify, --verify-fold) sampled as the "
                        "base-sampled reference is (temperature 0.7, top-p 0.9, seed = the prompt's position), as "
                        "METHOD-sampled, held to the base's sampled answers in every band; '--sample only': sampled "
                        "instead of greedy")
    p.add_argument("--draws", type=int, default=1, metavar="K",
                   help="answer each prompt K times with every sampled method (base-sampled and each METHOD-sampled), "
                        "draw k seeded with the prompt's position + k * 1,000,000 (draw 0: the seeds of a one-draw "
                        "run); the bands pair per-prompt means over the draws, which narrows the sampling spread. "
                        "With --reuse-base, the draws DIR holds are reused and the others decoded (default 1)")
    p.add_argument("--no-base-sampled", action="store_true",
                   help="leave out the base's sampled answers (the reference of the NLL bands)")
    p.add_argument("--reuse-base", default=None, metavar="DIR",
                   help="take the base's and base-sampled answers (with their scores and timings) from the earlier "
                        "eval in DIR instead of decoding them again; refused unless DIR decoded the same base with "
                        "the same --max-new-tokens and task files on the same prompts")
    p.add_argument("--bands", default=None,
                   help="target bands, comma list of metric:reference:higher|lower:tolerance[:weight] (default: "
                        "inst_strict/inst_loose within 1 point of base, NLL/token and worst-token NLL <= base-sampled, "
                        "rep4 <= base; see hamburger/eval/paired.py)")
    p.add_argument("--out", default="runs/eval",
                   help="folder for examples.jsonl, summary.json/.md and the plot; while it runs it holds each batch's "
                        "answers (answers.partial.jsonl), which a rerun with the same settings goes on from")
    add_runtime(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("calibrate", help="set a model's default knob by rule on the dev prompts",
                       description=calibrate_library.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model(p, required=True, help="HAMburger checkpoint whose default knob is set")
    p.add_argument("--tasks", type=names, default="chat,gsm8k",
                   help="dev tasks, comma list of chat, gsm8k (default both)")
    add_confidence_sweep(p, "0.5,0.6,0.7,0.8,0.9,1.0", "knobs to sweep (default 0.5..1.0)")
    p.add_argument("--limit", type=int, default=40, help="dev prompts per task (default 40)")
    add_max_new_tokens(p)
    p.add_argument("--batch-size", type=int, default=4, help="prompts generated together (default 4)")
    p.add_argument("--rule", default="point", choices=["point", "ci"],
                   help="inside a band: by the point estimate (default) or by the whole 95%% interval")
    p.add_argument("--bands", default=None, help="target bands, as for `hamburger eval --bands`")
    p.add_argument("--results", default=None,
                   help="choose from an existing `hamburger eval` run on dev tasks (its folder) instead of running one")
    p.add_argument("--out", default="runs/calibrate", help="folder for the sweep's eval outputs")
    p.add_argument("--dry-run", action="store_true", help="print the knob, leave the checkpoint unchanged")
    add_runtime(p)
    p.set_defaults(func=cmd_calibrate)
