"""`hamburger heads`: choose a checkpoint's full heads (verify_fold) by scoring every key/value head of its base."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hamburger.cli.options import add_model, add_runtime, device_of
from hamburger.engine.folding import READER_FOLD
from hamburger.eval import head_scores as library


def cmd_heads(args: argparse.Namespace) -> int:
    from hamburger.core.loading import default_model, load_model, set_threads
    from hamburger.engine.folding import parse_folding
    from hamburger.eval.head_scores import choose, save_full_heads, score_heads, score_rows

    set_threads(args.threads)
    folding = parse_folding(args.fold)
    model, tokenizer, _, reference = load_model(args.model, args.dtype, args.base, reference=True,
                                                device=device_of(args))
    folding.validate(model.config.max_steps)
    summary, scores = score_heads(reference, tokenizer, args.answers, folding, args.limit, args.min_tokens)
    chosen = choose(scores, args.count)
    record = {**summary, "fold": args.fold, "answers_file": Path(args.answers).name, "count": args.count}
    rows = score_rows(record, scores)
    rows.append({"chosen": [list(h) for h in chosen]})
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text, end="")
    if args.save:
        where = save_full_heads(args.model or default_model(), chosen, model.base.config, record)
        print(f"full heads {[list(h) for h in chosen]} saved in {where}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("heads", help="choose a checkpoint's full heads for verify_fold by scoring its base's heads",
                       description=library.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model(p)
    p.add_argument("--answers", required=True,
                   help="answers to score on: a distill file (prompt, response_token_ids) or a segment file "
                        "(prompt_ids, response_ids); training prompts only, never dev or test ones")
    p.add_argument("--fold", default=READER_FOLD, metavar="GROUPS:WINDOW[:FIELD...]",
                   help="the token-dropping fold the heads read around (default: the one the default model's heads "
                        "were chosen for, %(default)s; see generate --fold)")
    p.add_argument("--count", type=int, default=4,
                   help="full heads to choose, best-scored first (default %(default)s). Each keeps every slot in one "
                        "key/value head of one layer, so it costs 1 / (layers x key/value heads) of the KV the fold "
                        "saves")
    p.add_argument("--limit", type=int, default=20, help="answers to score (default %(default)s)")
    p.add_argument("--min-tokens", type=int, default=160,
                   help="shortest answer scored, in tokens (default %(default)s; shorter ones fold little)")
    p.add_argument("--out", default=None, help="write the scores (JSON lines) here instead of printing them")
    p.add_argument("--save", action="store_true",
                   help="write the chosen heads into the checkpoint's config (its `full_heads`), where verify_fold "
                        "reads them")
    add_runtime(p)
    p.set_defaults(func=cmd_heads)
