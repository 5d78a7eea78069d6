"""The decoding modes of `hamburger generate` and `hamburger chat`: their options, the model and the engine run.

verify_fold (the default since session 56, experiments/2026-12-03-default-mode/): verify mode on a smaller KV cache,
the answer's older tokens and then the prompt's stored coarser (`folding.DEFAULT_FOLD`); verify: lossless verify mode,
the micro-step decoder and prompt lookup draft and the base checks every token; hamburger: the paper's merged groups
and confidence knob.
"""

from __future__ import annotations

import argparse

from hamburger.cli import options
from hamburger.engine.folding import DEFAULT_FOLD, READER_FOLD
from hamburger.engine.full_heads import parse_full_heads
from hamburger.engine.lookup import LOOKUP_TOKENS
from hamburger.engine.verify import VERIFY_CONFIDENCE
from hamburger.errors import HamburgerError

KNOB_HELP = ("in the verify modes (verify_fold, the default, and verify): the micro-step decoder drafts while the stop "
             f"head's 1 - p_stop >= confidence (default {VERIFY_CONFIDENCE}); with --mode hamburger: "
             + options.KNOB_HELP)
MODES = ("verify_fold", "verify", "hamburger")  # the default first


def add_mode_options(p: argparse.ArgumentParser) -> None:
    """--mode, --draft, --fold, --full-heads, --lookup and --ngrams."""
    p.add_argument("--mode", choices=MODES, default=MODES[0],
                   help="verify_fold (default): the micro-step decoder, prompt lookup and (greedy) an n-gram table "
                        "draft and the base model checks every token, reading a smaller KV cache: by default the "
                        "answer's tokens older than a window, and from then on the prompt's, stay at 8-bit keys and "
                        "4-bit values (--fold; about half the KV bytes on long answers). Every token is still the "
                        "base's choice, within its quality bands on the dev prompts, but not always token for token "
                        "its output. verify: the same on a full-precision cache, lossless (the base's greedy output "
                        "exactly, or its distribution when sampling; one KV slot per token). hamburger: the paper's "
                        "decoding, token groups from the micro-step decoder share one KV slot, the confidence knob "
                        "trades fidelity for speed")
    p.add_argument("--draft", type=int, default=None,
                   help="in the verify modes: draft exactly this many tokens per base forward instead of asking "
                        "the stop head")
    p.add_argument("--fold", default=None, metavar="GROUPS:WINDOW[:FIELD...]",
                   help="in the verify modes: fold older answer tokens into one KV slot per group once WINDOW tokens "
                        "follow them; GROUPS is segments (the base's own entropy cut, as training data is cut) or "
                        "forwards (the tokens one base forward kept). Optional fields: SHARE (a number: the window is "
                        "that share of the answer's tokens when more, segments:32:0.25), KEEP (merged: one merged "
                        "slot, HAMburger's, read through the checkpoint's adapters; last or first: the group keeps "
                        "that token's own slot, training-free; none: it leaves nothing, eviction), steps=N (the "
                        "longest group; merged: at most the embedder's), p=P (the entropy cut's confidence, "
                        "default 0.9), kv=B (a KV budget: fold only while the answer holds more than B slots per "
                        "token, oldest groups first), offtop (a sampled token the base did not rank first keeps "
                        "its own slot; keeps first, last and none), bits=8, bits=4 or bits=8/4 (the tokens a fold "
                        "takes out stay, stored at that many bits, keys/values, and groups of one token fold too: "
                        "KV-cache quantization instead of dropping; keeps first, last and none, no kv budget, no full "
                        "heads), rotate (the store turns each head's channels before rounding) and prompt=N (the "
                        "prompt's slots are stored too, all but its first N, once the answer's first are), e.g. "
                        f"segments:32 (merged), {READER_FOLD} (drops tokens; the default model's fold reader reads "
                        f"it) or {DEFAULT_FOLD} (verify_fold's default). Every token is "
                        "still the base model's choice, but reading folded history it is no longer exactly the base's "
                        "output")
    p.add_argument("--full-heads", type=parse_full_heads, default=None, metavar="LAYER:HEAD,...",
                   help="with folding: these key/value heads of the base (LAYER:HEAD pairs, or none) keep every slot "
                        "the fold takes out, so they still read the whole answer, and the others read the fold; "
                        "each costs its share of the KV the fold saves (default: the checkpoint's own full heads)")
    p.add_argument("--lookup", type=int, default=None, metavar="N",
                   help="in the verify modes: where the text's last 2-3 tokens occurred before (in the prompt or the "
                        "answer), draft the up to N tokens that followed them (prompt lookup; free: no forward makes "
                        "them) instead of asking the micro-step decoder; the base still checks every token "
                        f"(default {LOOKUP_TOKENS}; 0: the micro-step decoder drafts alone)")
    p.add_argument("--ngrams", type=int, default=None, metavar="N",
                   help="in the verify modes, greedy decoding: where prompt lookup finds no match, draft up to N "
                        "tokens from the checkpoint's n-gram table (how the base itself most often went on after the "
                        "text's last 2-3 tokens in its own greedy answers; free: no forward makes them) before asking "
                        "the micro-step decoder; the base still checks every token (default: the table's own, 10, "
                        "when the checkpoint has one, as the default model does; 0: none). Sampled rows never draft "
                        "from it")


def check_mode_options(args: argparse.Namespace) -> None:
    """The verify modes' options are refused in mode hamburger."""
    for flag, value in (("--draft", args.draft), ("--fold", args.fold), ("--lookup", args.lookup),
                        ("--ngrams", args.ngrams), ("--full-heads", args.full_heads)):
        if value is not None and args.mode == "hamburger":
            raise HamburgerError(f"{flag} applies to the verify modes only (verify_fold, the default, and verify)")
    if args.full_heads is not None and not folding_spec(args):
        raise HamburgerError("--full-heads keeps slots a fold takes out: it needs --mode verify_fold or --fold")


def folding_spec(args: argparse.Namespace) -> str | None:
    """The folding of this run: --fold, else `DEFAULT_FOLD` in mode verify_fold; None: no folding."""
    return args.fold or (DEFAULT_FOLD if args.mode == "verify_fold" else None)


def generation_model(args: argparse.Namespace, device: str):
    """(model, tokenizer) for `generate` and `chat`: in lossless verify mode the grafted modules sit on the
    checkpoint's unchanged base (its LoRA adapters or fine-tuned base left out), so the output is that base's own;
    folding (mode verify_fold, or --fold) keeps the checkpoint's adapters, which read the folded slots, or takes its
    fold reader instead where it has one and the fold keeps a token (`loading.reads_with_fold_reader`)."""
    from hamburger.core.loading import load_model

    if args.mode != "verify" or folding_spec(args):
        from hamburger.core.loading import reads_with_fold_reader
        from hamburger.engine.folding import parse_folding

        spec = folding_spec(args)
        reader = bool(spec) and reads_with_fold_reader(args.model, parse_folding(spec))
        return load_model(args.model, args.dtype, args.base, device=device, fold_reader=reader)[:2]
    from hamburger.engine.verify import on_base

    model, tokenizer, _, reference = load_model(args.model, args.dtype, args.base, reference=True, device=device)
    return on_base(model, reference), tokenizer


def make_generation(args: argparse.Namespace, model, tokenizer, ids, configs, prompt_cache=None):
    """The engine run for `generate` and `chat`: verify mode, folding (verify_fold) or lossless (verify), or
    HAMburger (lossy, one KV slot per group); ``prompt_cache``: the `PromptCache` it reads prompts on from."""
    from hamburger.engine.generate import Generation

    if args.mode != "hamburger":
        from hamburger.engine.folding import parse_folding
        from hamburger.engine.lookup import PromptLookup
        from hamburger.engine.ngrams import model_ngrams
        from hamburger.engine.verify import VerifyGeneration

        lookup = LOOKUP_TOKENS if args.lookup is None else args.lookup
        return VerifyGeneration(model, tokenizer, ids, configs, draft=args.draft, draft_vocab=model.draft_vocab,
                                fold=parse_folding(spec) if (spec := folding_spec(args)) else None,
                                lookup=PromptLookup(tokens=lookup) if lookup else None,
                                ngrams=model_ngrams(model, args.ngrams), full_heads=args.full_heads,
                                prompt_cache=prompt_cache)
    return Generation(model, tokenizer, ids, configs, prompt_cache=prompt_cache)
