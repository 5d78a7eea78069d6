"""`hamburger serve`: an OpenAI-compatible HTTP server over a HAMburger checkpoint."""

from __future__ import annotations

import argparse

from hamburger.cli.options import add_model, add_runtime, device_of
from hamburger.engine.folding import DEFAULT_FOLD
from hamburger.engine.lookup import LOOKUP_TOKENS
from hamburger.engine.prompt_cache import PROMPT_CACHE_MIB
from hamburger.serve.app import DRAIN_TIMEOUT, MAX_REQUEST_BYTES, PREFILL_CHUNK
from hamburger.serve.protocol import MODES


def cmd_serve(args: argparse.Namespace) -> int:
    from hamburger.serve.server import serve

    device = device_of(args)
    serve(args.model, host=args.host, port=args.port, api_key=args.api_key, served_model_name=args.served_model_name,
          max_batch_size=args.max_batch_size, max_queue=args.max_queue, max_tokens=args.max_tokens,
          confidence=args.confidence, mode=args.mode, max_request_bytes=args.max_request_bytes,
          prefill_chunk=args.prefill_chunk, drain_timeout=args.drain_timeout, dtype=args.dtype, device=device,
          base=args.base, log_level=args.log_level, fold=args.fold, lookup=args.lookup, draft_rows=args.draft_rows,
          ngrams=args.ngrams, prompt_cache=args.prompt_cache)
    return 0


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve a HAMburger model over an OpenAI-compatible HTTP API",
                       description="Serve POST /v1/chat/completions (with function calling, and custom tools "
                                   "whose text input is held to a Lark grammar or a regex), POST /v1/completions, "
                                   "POST /v1/responses, GET /v1/models, GET /health, GET /metrics and POST /tokenize "
                                   "and /detokenize (vLLM's); answers can be "
                                   "held to a JSON schema (response_format) or, as vLLM's structured_outputs ask, to a "
                                   "regex, a choice or a grammar. Concurrent requests are batched (up to "
                                   "--max-batch-size rows; waiting requests join the running batch as rows finish); more "
                                   "than --max-queue waiting requests get 429.")
    add_model(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--api-key", default=None,
                   help="require 'Authorization: Bearer KEY' on /v1, /tokenize and /detokenize (default: "
                        "$HAMBURGER_API_KEY, else no key)")
    p.add_argument("--served-model-name", default=None, help="model id shown by /v1/models (default: folder name)")
    p.add_argument("--max-batch-size", type=int, default=8, help="most requests generated together (default 8)")
    p.add_argument("--max-queue", type=int, default=64,
                   help="most requests waiting for a batch; more are refused with 429 (default 64)")
    # A request's `max_tokens` default (OpenAI's field), not --max-new-tokens: a server answers open-ended chats.
    p.add_argument("--max-tokens", type=int, default=512,
                   help="completion tokens when a request sets no max_tokens (default 512)")
    p.add_argument("--confidence", type=float, default=None,
                   help="default knob in (0, 1] for requests without 'confidence' (default: the checkpoint's)")
    p.add_argument("--mode", default="verify", choices=MODES,
                   help="decoding mode of requests without a 'mode' field: verify (lossless: the micro-step decoder "
                        "and prompt lookup draft, the unchanged base verifies; the base's own output; the fastest "
                        "at 1-2 concurrent requests on a CPU, about even with hamburger at 1.0 at 4-8, "
                        "benchmarks/serve_modes.sh, experiments/2026-12-03-serve-gap), hamburger (merged groups, "
                        "the confidence knob, one KV slot per group; at the checkpoint's knob 1.0 the base's own "
                        "decoding) or verify_fold (verify "
                        "mode on a smaller KV cache: older tokens kept at low precision, or folded, by --fold; every "
                        "token the base's choice on that cache) (default verify). In the verify modes "
                        "a request's confidence is the stop head's drafting threshold")
    p.add_argument("--fold", default=DEFAULT_FOLD, metavar="GROUPS:WINDOW[:FIELD...]",
                   help="the folding of verify_fold requests: a group folds into one KV slot once WINDOW answer "
                        "tokens follow it; GROUPS is segments (the base's entropy cut) or forwards; optional SHARE, "
                        "KEEP (merged, last, first or none), steps=N, p=P, kv=B, offtop and bits=N as in generate "
                        "--fold (default %(default)s)")
    p.add_argument("--lookup", type=int, default=LOOKUP_TOKENS, metavar="N",
                   help="both verify modes also draft by prompt lookup: up to N tokens that followed an earlier "
                        "occurrence of the text's last 2-3 tokens (default %(default)s; 0: the micro-step decoder "
                        "drafts alone)")
    p.add_argument("--ngrams", type=int, default=None, metavar="N",
                   help="both verify modes also draft greedy requests, where prompt lookup finds no match, up to N "
                        "tokens from the checkpoint's n-gram table (the base's own most frequent continuations of the "
                        "text's last 2-3 tokens) (default: the table's own, 10, when the checkpoint has one; 0: none)")
    p.add_argument("--draft-rows", type=int, default=None, metavar="N",
                   help="both verify modes draft (by the micro-step decoder or prompt lookup) only in base forwards of "
                        "at most N rows; a fuller batch decodes one token per row, as the hamburger mode at knob 1.0 "
                        "does (still lossless) (default: 3 on a CPU, where drafting stopped paying from 4 busy rows, "
                        "benchmarks/serve_modes.sh; no limit on a GPU)")
    p.add_argument("--max-request-bytes", type=int, default=MAX_REQUEST_BYTES,
                   help=f"largest request body; larger ones get 413 before they are read (default {MAX_REQUEST_BYTES})")
    p.add_argument("--prefill-chunk", type=int, default=PREFILL_CHUNK,
                   help="prefill longer prompts this many tokens at a time, between the running requests' steps, "
                        "so one long prompt does not stall them (0: whole prompts at once; default %(default)s)")
    p.add_argument("--prompt-cache", type=float, default=PROMPT_CACHE_MIB, metavar="MIB",
                   help="keep the KV cache of the prompts read, up to this many MiB per mode, least recently used "
                        "forgotten: a prompt that begins with a kept one (a chat's next turn, a shared system "
                        "prompt) reads only the rest, with the same answer, and holds only its own slots after "
                        "their common start; usage.prompt_tokens_details.cached_tokens counts the tokens not read "
                        "again (0: keep none; default %(default)s)")
    p.add_argument("--drain-timeout", type=float, default=DRAIN_TIMEOUT,
                   help="on SIGTERM/SIGINT: seconds the running requests get to finish before they are cut "
                        "(finish_reason 'length'); new requests get 503 meanwhile (default %(default)s)")
    add_runtime(p)
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn log level (default info)")
    p.set_defaults(func=cmd_serve)
