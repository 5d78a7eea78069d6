"""`hamburger generate`: one reply with its token groups visible, or a prompts file in batches (JSON lines)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hamburger.cli.modes import KNOB_HELP, add_mode_options, check_mode_options, generation_model, make_generation
from hamburger.cli.options import (add_model, add_runtime, add_sampling, add_template_kwargs, decoding_config,
                                   device_of, templating, text_or_file)
from hamburger.errors import HamburgerError


def read_prompt(args: argparse.Namespace) -> str:
    """The prompt from the command line or stdin; an empty one is refused before any model loads."""
    if args.prompt == "-" or (args.prompt is None and not sys.stdin.isatty()):
        prompt = sys.stdin.read()
    elif args.prompt is None:
        raise HamburgerError("give a PROMPT (or '-' to read it from stdin)")
    else:
        prompt = args.prompt
    if not prompt.strip():
        raise HamburgerError("the prompt is empty")
    return prompt


# the settings a line of a prompts file can give its own prompt (`DecodingConfig`'s fields; the options' otherwise)
LINE_SETTINGS = ("max_new_tokens", "seed", "temperature", "top_p", "top_k", "min_p", "stop", "stop_token_ids",
                 "min_tokens", "ignore_eos", "presence_penalty", "frequency_penalty", "repetition_penalty",
                 "confidence")


def line_config(config, row: dict, where: str):
    """``config`` with the settings a prompts file's ``row`` gives (`LINE_SETTINGS`; a `stop` string is one stop
    string), validated; a bad value is an error that says ``where``."""
    from dataclasses import replace

    given = {k: row[k] for k in LINE_SETTINGS if k in row}
    if isinstance(given.get("stop"), str):
        given["stop"] = [given["stop"]]
    try:
        if "stop" in given and not (isinstance(given["stop"], list) and all(isinstance(s, str) for s in given["stop"])):
            raise HamburgerError("'stop' must be a string or a list of strings")
        return replace(config, **given).validate()
    except (HamburgerError, TypeError, ValueError) as e:
        raise HamburgerError(f"{where}{e}") from None


def answer_rows(rows: list[dict], configs: list, n: int, where) -> list[tuple[int, int | None, object]]:
    """(line, index, config) of each answer to a prompts file's ``rows`` (line: its row's place in them): a line's `n`
    answers (its own 'n', or ``n``), seeded ones with successive seeds (`DecodingConfig.answers`); index None where the
    line has one answer. ``where``: a line's number -> the prefix of its errors."""
    out = []
    for line, (row, config) in enumerate(zip(rows, configs)):
        count = row.get("n", n)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise HamburgerError(f"{where(line + 1)}'n' must be a positive integer, got {count!r}")
        out += [(line, i if count > 1 else None, c) for i, c in enumerate(config.answers(count))]
    return out


def answered(args: argparse.Namespace, config, rows: list[dict], answers: list[tuple]) -> int:
    """How many of the ``answers`` to ``rows`` (`answer_rows`) the --out file holds already (0 without --out): a rerun
    with the same settings (the file's sidecar holds them) goes on after them; a half-written last line is cut off."""
    from dataclasses import asdict

    from hamburger.data.io import check_meta, read_jsonl

    if args.out is None:
        return 0
    out = Path(args.out)
    done = read_jsonl(out, tail="cut", missing_ok=True)
    meta = json.loads(json.dumps({"model": args.model, "base": args.base, "mode": args.mode, "raw": args.raw,
                                  "system": args.system, "chat_template_kwargs": args.chat_template_kwargs,
                                  "n": args.n, "settings": asdict(config)}))
    check_meta(out, meta, tuple(meta), bool(done))
    if len(done) > len(answers) or any(("id" in rows[line] and a.get("id") != rows[line]["id"]) or
                                       a.get("index") != index for a, (line, index, _) in zip(done, answers)):
        raise HamburgerError(f"{out} holds answers to other prompts than {args.prompts_file}'s; use another --out")
    return len(done)


def generate_file(args: argparse.Namespace, config, device: str) -> int:
    """Batched generation over a prompts file; one JSON object per answer (with its line's `id`, if any, and its
    `index` among the line's answers where it has several), in input order: on stdout, or appended to --out, which a
    rerun goes on from."""
    from tqdm import tqdm

    from hamburger.data.io import append_jsonl, read_prompt_file
    from hamburger.engine.prompt import encode_prompt

    rows = read_prompt_file(args.prompts_file, conversations=True)
    if args.raw and any("messages" in r for r in rows):
        raise HamburgerError(f"{args.prompts_file}: a line's 'messages' need the chat template, which --raw leaves out")
    if args.batch_size < 1:
        raise HamburgerError("--batch-size must be >= 1")
    where = lambda n: f"prompt {n} of {args.prompts_file}: "  # noqa: E731
    configs = [line_config(config, r, where(n)) for n, r in enumerate(rows, 1)]
    predictions = [r.get("prediction", args.prediction) for r in rows]
    for n, text in enumerate(predictions, 1):
        if text is not None:
            check_prediction(args, text, where(n))
    todo = answer_rows(rows, configs, args.n, where)
    done = answered(args, config, rows, todo)
    if done == len(todo):
        print(f"{args.out}: all {done} answers are there already", file=sys.stderr)
        return 0
    model, tokenizer = generation_model(args, device)
    prompt_ids = {}  # (each line still to answer, read once for its answers; --system where a conversation has none)
    for line in dict.fromkeys(line for line, _, _ in todo[done:]):
        row = rows[line]
        system = None if any(m["role"] == "system" for m in row.get("messages", ())) else args.system
        prompt_ids[line] = encode_prompt(tokenizer, row.get("prompt", row.get("messages")), raw=args.raw,
                                         templating=templating(args), system=system)
    bar = tqdm(total=len(todo), initial=done, unit="answer", file=sys.stderr, disable=args.out is None)
    for start in range(done, len(todo), args.batch_size):
        chunk = todo[start:start + args.batch_size]
        results = make_generation(args, model, tokenizer, [prompt_ids[line] for line, _, _ in chunk],
                                  [predicted(c, tokenizer, predictions[line]) for line, _, c in chunk]).run()
        answers = [{**({"id": rows[line]["id"]} if "id" in rows[line] else {}),
                    **({} if index is None else {"index": index}), **result.to_dict()}
                   for (line, index, _), result in zip(chunk, results)]
        if args.out is None:
            print("\n".join(map(json.dumps, answers)), flush=True)
        else:
            append_jsonl(Path(args.out), answers)
            bar.update(len(answers))
    bar.close()
    if args.out is not None:
        print(f"{args.out}: {len(todo)} answers ({len(todo) - done} new)", file=sys.stderr)
    return 0


def check_prediction(args: argparse.Namespace, text, where: str = "") -> None:
    """A prediction is text, and only the verify modes draft from it."""
    if not isinstance(text, str):
        raise HamburgerError(f"{where}'prediction' must be a string, got {type(text).__name__}")
    if args.mode == "hamburger":
        raise HamburgerError(f"{where}a prediction drafts in the verify modes only (verify_fold, the default, and "
                             "verify); mode hamburger decodes merged groups and drafts nothing")


def predicted(config, tokenizer, text: str | None):
    """``config`` drafting from ``text`` (`DecodingConfig.prediction`: its token ids), or as it is for None."""
    from dataclasses import replace

    return config if text is None else replace(config, prediction=tokenizer.encode(text, add_special_tokens=False)
                                               or None)


def cmd_generate(args: argparse.Namespace) -> int:
    from hamburger.cli.render import render_groups, summary_line
    from hamburger.engine.prompt import encode_prompt

    from dataclasses import replace

    check_mode_options(args)
    if args.n < 1:
        raise HamburgerError("--n must be >= 1")
    config = replace(decoding_config(args), top_logprobs=args.top_logprobs).validate()
    if args.top_logprobs and not (args.json or args.prompts_file):
        raise HamburgerError("--top-logprobs shows in the JSON output: add --json (or use --prompts-file)")
    device = device_of(args)
    if args.prompts_file:
        return generate_file(args, config, device)
    if args.out is not None:
        raise HamburgerError("--out writes the answers of a --prompts-file")
    if args.n > 1 and (args.stream or args.html):
        raise HamburgerError(f"--{'stream' if args.stream else 'html'} shows one answer: leave --n out (or use --json)")
    prompt = read_prompt(args)
    if args.prediction is not None:
        check_prediction(args, args.prediction)
    model, tokenizer = generation_model(args, device)
    config = predicted(config, tokenizer, args.prediction)
    ids = encode_prompt(tokenizer, prompt, raw=args.raw, system=args.system, templating=templating(args))
    run = make_generation(args, model, tokenizer, [ids] * args.n, config.answers(args.n))
    if args.json:
        for i, result in enumerate(run.run()):
            print(json.dumps({**({"index": i} if args.n > 1 else {}), **result.to_dict()}))
        return 0
    color = sys.stdout.isatty() and not args.no_color and os.environ.get("NO_COLOR") is None
    if args.stream:
        from hamburger.cli.render import stream_text

        for event in run:
            print(stream_text(event, color), end="", flush=True)
        print()
        results = run.results
    else:
        results = run.run()
    for i, result in enumerate(results):
        if not args.stream:
            if args.n > 1:
                print(f"[answer {i + 1} of {args.n}]")
            print(render_groups(tokenizer, result, color, config.skip_special_tokens))
        print(summary_line(result), file=sys.stderr)
    if args.html:
        from hamburger.cli.render import html_page

        Path(args.html).write_text(html_page(tokenizer, results[0], prompt, config.skip_special_tokens),
                                   encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("generate", help="generate text with a HAMburger model",
                       description="Generate a reply to PROMPT. The text is shown with its token groups visible "
                                   "(coloured on a terminal by the stop head's confidence, '|'-separated otherwise), "
                                   "followed by a summary line on stderr.")
    p.add_argument("prompt", nargs="?", default=None, help="the prompt ('-' or omitted with a pipe: read stdin)")
    add_model(p)
    p.add_argument("--prompts-file", default=None,
                   help="jsonl with a 'prompt' field per line (or 'messages', a chat conversation as OpenAI's), and "
                        "optionally its own 'prediction' and settings "
                        "(" + ", ".join(f"'{k}'" for k in LINE_SETTINGS) + ": the options' names with underscores; "
                        "the options otherwise), and 'n', its number of answers: generate them in batches and print "
                        "one JSON object per answer, in input order, with the line's 'id' if it has one (and the "
                        "answer's 'index' where its line has several)")
    p.add_argument("--batch-size", type=int, default=8, help="answers per batch with --prompts-file (default 8)")
    p.add_argument("--n", type=int, default=1,
                   help="answers per prompt, generated together (default 1; with --prompts-file, where a line gives no "
                        "'n'); a seeded prompt's answers draw with the seeds seed, seed + 1, ..., as the server's 'n' "
                        "does. Each is shown in turn with its summary line, or with --json is one object with its "
                        "'index'")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="with --prompts-file: append the answers to FILE (jsonl, each batch written to disk before the "
                        "next), with a progress bar; a rerun with the same settings goes on after the answers FILE "
                        "holds already (its sidecar FILE.meta.json holds the settings)")
    add_mode_options(p)
    add_sampling(p, knob=KNOB_HELP)
    p.add_argument("--prediction", type=text_or_file, metavar="TEXT",
                   help="in the verify modes: what much of the answer is expected to be (inline, or a file holding it: "
                        "the text an edit starts from, an earlier answer), drafted where the answer follows it, the "
                        "base checking every draft, so the answer is the same, in fewer forwards (OpenAI's predicted "
                        "outputs). The summary and --json count its drafts kept and refused. With --prompts-file, a "
                        "row's 'prediction' field is its own")
    p.add_argument("--raw", action="store_true", help="do not apply the chat template")
    p.add_argument("--system", default=None, help="system message for the chat template")
    add_template_kwargs(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: text, token_ids, groups, tokens, forwards, tau, kv_slots, kv_bytes, "
                        "kv_slots_ordinary, kv_bytes_ordinary, prefill_s, decode_s, decode_tok_s, finish_reason...")
    p.add_argument("--top-logprobs", type=int, default=0, metavar="N",
                   help="with --json or --prompts-file: each token's N most likely tokens with their "
                        "log-probabilities ('alternatives': [id, log-probability] pairs, beside 'token_probs'), under "
                        "the distribution it was chosen from before temperature, top-k, top-p and min-p; 0-20 "
                        "(default 0)")
    p.add_argument("--stream", action="store_true", help="print text as groups are produced")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write the group view as a standalone HTML page")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    add_runtime(p)
    p.set_defaults(func=cmd_generate)
