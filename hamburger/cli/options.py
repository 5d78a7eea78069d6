"""Options shared by the verbs: one definition each, so names, choices, defaults and help agree everywhere.

    add_model      --model, --base              a HAMburger checkpoint (and where its base moved to)
    add_base       --base                       a base model (the data verbs, which run the base alone)
    add_runtime    --device, --dtype, --threads where and how a model runs
    add_sampling   --confidence, --max-new-tokens, --temperature, --top-p, --top-k, --seed, --stop, penalties,
                   --json-schema
    add_template_kwargs --chat-template-kwargs  more variables for the chat template
"""

from __future__ import annotations

import argparse

from hamburger.errors import HamburgerError

DEVICES = ("cpu", "cuda", "auto")
DTYPES = ("float32", "bfloat16")
MAX_NEW_TOKENS = 256  # every verb that writes answers (generate, chat, distill, eval, calibrate)

MODEL_HELP = "HAMburger checkpoint folder (default: the bundled trained model)"


def add_model(p: argparse.ArgumentParser, *, required: bool = False, help: str = MODEL_HELP) -> None:
    """--model CKPT and --base (where the checkpoint's base model is, if it moved)."""
    p.add_argument("--model", required=required, default=None, help=help)
    p.add_argument("--base", default=None, help="where the checkpoint's base model is, if it moved")


def add_base(p: argparse.ArgumentParser) -> None:
    """--base: the base model a data verb runs on its own (no checkpoint)."""
    p.add_argument("--base", default=None,
                   help="base model: a bundled name (smollm2-135m-instruct, the default), a HF folder or a hub id")


def add_runtime(p: argparse.ArgumentParser, *, dtypes: tuple[str, ...] = DTYPES, from_config: bool = False,
                device_note: str = "") -> None:
    """--device cpu|cuda|auto, --dtype and --threads. ``from_config``: the defaults come from a settings file
    (train), so the options default to None and only override it when given. ``device_note``: added to the
    help of --device."""
    config = "the config's "
    p.add_argument("--device", choices=DEVICES, default=None if from_config else "cpu",
                   help="where the model runs: cpu, cuda or auto (cuda when present); cuda without a GPU is an "
                        "error (default: " + (config + "`device`, auto" if from_config else "cpu") + ")" + device_note)
    p.add_argument("--dtype", choices=dtypes, default=None if from_config else "float32",
                   help=("compute dtype: bfloat16 = autocast, the master weights stay float32 (default: the config's "
                         "`dtype`, fp32)") if from_config else "compute dtype (default: float32)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: " + (config + "`threads`, " if from_config else "")
                        + "torch's choice)")


def add_max_new_tokens(p: argparse.ArgumentParser, what: str = "answer") -> None:
    p.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS,
                   help=f"most new tokens per {what} (default {MAX_NEW_TOKENS})")


KNOB_HELP = ("knob in (0, 1]: a group goes on while 1 - p_stop >= confidence (with the checkpoint's gate "
             "token_prob: while the micro-step decoder gives its next token probability >= confidence); "
             "higher = closer to the base model, "
             "1.0 = one token per forward (default: the checkpoint's default)")


def add_sampling(p: argparse.ArgumentParser, *, what: str = "answer", knob: str | None = KNOB_HELP,
                 extra: bool = True, seed: int | None = None) -> None:
    """--max-new-tokens, --temperature, --top-p, --seed; --confidence with ``knob`` as its help (None: no knob,
    the base model alone); with ``extra`` --top-k, --stop, the penalties, --json-schema and --logit-bias. ``seed``: the
    default seed (None: unseeded)."""
    if knob:
        p.add_argument("--confidence", type=float, default=None, help=knob)
        p.add_argument("--reread", type=float, default=0.0,
                       help="re-read on doubt, in [0, 1]: after a merged group, if the most likely next token has "
                            "probability below this, the group is read again one slot per token (one more forward, "
                            "its KV saving undone) and decoding goes on from that reading; 0 = never (default)")
    add_max_new_tokens(p, what)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default); > 0 samples")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass in (0, 1] (default 1.0)")
    if extra:
        p.add_argument("--top-k", type=int, default=0, help="sample among the k most likely tokens (0 or -1 = all)")
        p.add_argument("--min-p", type=float, default=0.0,
                       help="in [0, 1]: sample only among tokens at least this times as likely as the most likely one "
                            "(after temperature, top-k and top-p; 0 = off, the default)")
    p.add_argument("--seed", type=int, default=seed,
                   help="seed for sampling (reproducible output)" + (f" (default {seed})" if seed is not None else ""))
    if extra:
        p.add_argument("--stop", action="append", help="stop string (repeatable); the text ends before it")
        p.add_argument("--include-stop-str-in-output", action="store_true",
                       help="end the text with the stop string that ended it instead of before it (and with the text "
                            "of the --stop-token-id that ended it)")
        p.add_argument("--keep-special-tokens", action="store_true",
                       help="show the tokenizer's special tokens in the text (left out by default)")
        p.add_argument("--stop-token-id", type=int, action="append", metavar="ID",
                       help="a token id that ends the answer as an end-of-sequence token does (repeatable; "
                            "--ignore-eos leaves it on)")
        p.add_argument("--allowed-token-id", type=int, action="append", metavar="ID",
                       help="only these token ids may be chosen (repeatable; every other id is banned, the "
                            "end-of-sequence ids too unless named)")
        p.add_argument("--bad-word", action="append", metavar="WORD",
                       help="a word the answer may not hold, as the tokenizer spells it alone or after a space "
                            "(repeatable; vLLM's bad_words)")
        p.add_argument("--min-tokens", type=int, default=0,
                       help="no token that would end the answer before it holds this many tokens, and no --stop "
                            "string that ends within their text (0 = off, the default; at most --max-new-tokens)")
        p.add_argument("--ignore-eos", action="store_true",
                       help="go on past end-of-sequence tokens to --max-new-tokens (fixed-length runs)")
        p.add_argument("--repetition-penalty", type=float, default=1.0,
                       help="> 0: the logit of a token the prompt or the answer holds is divided by it where positive, "
                            "multiplied elsewhere (transformers' repetition_penalty; 1.0 = off, the default)")
        p.add_argument("--presence-penalty", type=float, default=0.0,
                       help="in [-2, 2]: subtracted from the logit of every token the answer holds (OpenAI's; "
                            "default 0)")
        p.add_argument("--frequency-penalty", type=float, default=0.0,
                       help="in [-2, 2]: times its count in the answer, subtracted from a token's logit (OpenAI's; "
                            "default 0)")
        p.add_argument("--json-schema", type=json_schema, metavar="SCHEMA",
                       help="hold the answer to this JSON schema (inline JSON, or a file holding it; '{\"type\": "
                            "\"object\"}' for any JSON object): tokens it does not allow are never chosen, and the "
                            "answer ends when it is complete")
        p.add_argument("--grammar", type=grammar, metavar="LARK",
                       help="hold the answer to this grammar instead (Lark, in llguidance's syntax: inline, or a file "
                            "holding it; e.g. 'start: \"yes\" | \"no\"'), as --json-schema does")
        p.add_argument("--logit-bias", type=bias_entry, action="append", metavar="ID=BIAS",
                       help="add BIAS in [-100, 100] to token ID's logit before any penalty (repeatable; -100 all but "
                            "bans it). Penalties and biases change the choices; the probabilities shown stay the "
                            "model's")


def decoding_config(args: argparse.Namespace):
    """The checked `DecodingConfig` of the options `add_sampling` added (with the knob and --stop)."""
    from hamburger.engine.sampling import DecodingConfig

    return DecodingConfig(max_new_tokens=args.max_new_tokens, confidence=args.confidence, reread=args.reread,
                          temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, min_p=args.min_p,
                          seed=args.seed, stop=args.stop or [], stop_token_ids=args.stop_token_id or [],
                          include_stop_str_in_output=args.include_stop_str_in_output,
                          skip_special_tokens=not args.keep_special_tokens,
                          allowed_token_ids=args.allowed_token_id, bad_words=args.bad_word or [],
                          min_tokens=args.min_tokens, ignore_eos=args.ignore_eos,
                          repetition_penalty=args.repetition_penalty, presence_penalty=args.presence_penalty,
                          frequency_penalty=args.frequency_penalty, logit_bias=dict(args.logit_bias or []),
                          json_schema=args.json_schema, grammar=args.grammar).validate()


def grammar(text: str) -> str:
    """--grammar: a Lark grammar, or the path of a file holding one (checked by `grammar.compile_lark` when a model uses
    it)."""
    return text_or_file(text)


def text_or_file(text: str) -> str:
    """An option's text, or the text of the file it names (a file that exists: text that merely could be a name
    stays text)."""
    from pathlib import Path

    try:
        names_a_file = "\n" not in text and Path(text).is_file()
    except OSError:  # a text too long to be a file's name
        names_a_file = False
    return Path(text).read_text() if names_a_file else text


def json_schema(text: str) -> dict:
    """--json-schema: inline JSON, or the path of a file holding it -> the schema (checked by `grammar.compile_schema`
    when a model uses it)."""
    return json_object(text if text.lstrip().startswith("{") else text_or_file(text), text, "a JSON schema", True)


def json_object(source: str, text: str, what: str, from_file: bool = False) -> dict:
    """The JSON object ``source`` holds (an option's ``text``, or the file it names where ``from_file``), or an
    argparse error that names ``what`` it should be."""
    import json

    try:
        value = json.loads(source)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON{', nor a file holding it' if from_file else ''}: {text!r} ({e})"
                                         ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{what} is a JSON object, got {text!r}")
    return value


def add_template_kwargs(p: argparse.ArgumentParser) -> None:
    """--chat-template-kwargs: more variables for the chat template (`prompt.Templating.kwargs`)."""
    p.add_argument("--chat-template-kwargs", type=template_kwargs, default={}, metavar="JSON",
                   help="more variables the chat template reads, as a JSON object (e.g. '{\"enable_thinking\": "
                        "false}' for Qwen3's); none by default")


def templating(args: argparse.Namespace):
    """The `prompt.Templating` of --chat-template-kwargs (refused beside --raw, which applies no template)."""
    from hamburger.engine.prompt import Templating

    if args.chat_template_kwargs and getattr(args, "raw", False):
        raise HamburgerError("--chat-template-kwargs is for the chat template, which --raw leaves out")
    return Templating(kwargs=args.chat_template_kwargs)


def template_kwargs(text: str) -> dict:
    """--chat-template-kwargs: a JSON object."""
    return json_object(text, text, "--chat-template-kwargs")


def bias_entry(text: str) -> tuple[int, float]:
    """ID=BIAS (--logit-bias) -> (token id, bias)."""
    token, sep, bias = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return int(token), float(bias)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ID=BIAS (a token id and a number), got {text!r}") from None


def add_confidence_sweep(p: argparse.ArgumentParser, default: str, help: str) -> None:
    """--confidence as a comma list of knob values (the verbs that sweep the knob: eval, calibrate)."""
    p.add_argument("--confidence", type=floats, default=default, help=help)


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def names(text: str) -> list[str]:
    return [x for x in text.split(",") if x]


def device_of(args: argparse.Namespace) -> str:
    """Check --device before any model loads (a one-line error for cuda without a GPU) and set --threads;
    returns the device name to hand to the library (cpu or cuda)."""
    from hamburger.core.base import pick_device
    from hamburger.core.loading import set_threads

    device = pick_device(args.device).type
    set_threads(args.threads)
    return device
