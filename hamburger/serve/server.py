"""`serve`: load a checkpoint and run the OpenAI-compatible app (`app.create_app`) under uvicorn until SIGTERM/SIGINT,
draining the running requests first (`drain`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hamburger.engine.folding import DEFAULT_FOLD
from hamburger.engine.lookup import LOOKUP_TOKENS
from hamburger.engine.prompt_cache import PROMPT_CACHE_MIB
from hamburger.errors import HamburgerError
from hamburger.serve.app import DRAIN_TIMEOUT, MAX_REQUEST_BYTES, PREFILL_CHUNK, create_app


CPU_DRAFT_ROWS = 3  # on a 2-core CPU, verify forwards of 4+ rows cost more than their drafts save (serve_modes.sh)


def serve(model_dir: str | None = None, *, host: str = "127.0.0.1", port: int = 8000, api_key: str | None = None,
          served_model_name: str | None = None, max_batch_size: int = 8, max_queue: int = 64, max_tokens: int = 512,
          confidence: float | None = None, mode: str = "verify", max_request_bytes: int = MAX_REQUEST_BYTES,
          prefill_chunk: int = PREFILL_CHUNK, drain_timeout: float = DRAIN_TIMEOUT, dtype: str = "float32",
          device: str = "cpu", base: str | None = None, log_level: str = "info", fold: str = DEFAULT_FOLD,
          lookup: int = LOOKUP_TOKENS, draft_rows: int | None = None, ngrams: int | None = None,
          prompt_cache: float = PROMPT_CACHE_MIB) -> None:
    """Serve the checkpoint ``model_dir`` (default: the bundled model) on http://HOST:PORT/v1 until stopped;
    ``api_key`` (default: $HAMBURGER_API_KEY, else none) is required on /v1 and the token utilities when set.
    ``fold`` (a `folding.parse_folding` spec): the folding of "verify_fold" requests; ``lookup`` N > 0: both verify
    modes also draft up to N tokens by prompt lookup; ``ngrams`` N: up to N from the checkpoint's n-gram table where
    lookup finds none (None: the table's own count; 0: none); ``draft_rows`` N: they draft only in forwards of at
    most N rows (None: `CPU_DRAFT_ROWS` on a CPU, no limit on a GPU); ``prompt_cache``: MiB of prompts' KV caches
    each mode keeps across requests (0: none)."""
    import uvicorn

    from hamburger.core.loading import fold_model, load_model
    from hamburger.engine.folding import parse_folding
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.ngrams import model_ngrams
    from hamburger.engine.verify import on_base
    from hamburger.serve.drain import GRACE_S, DrainingServer

    if confidence is not None and not 0.0 < confidence <= 1.0:
        raise HamburgerError(f"--confidence must be in (0, 1], got {confidence}")
    for name, value in (("max_batch_size", max_batch_size), ("max_queue", max_queue), ("max_tokens", max_tokens),
                        ("max_request_bytes", max_request_bytes)):
        if value < 1:
            raise HamburgerError(f"--{name.replace('_', '-')} must be >= 1")
    if prefill_chunk < 0:
        raise HamburgerError("--prefill-chunk must be >= 0 (0: no chunking)")
    if drain_timeout < 0:
        raise HamburgerError("--drain-timeout must be >= 0")
    if prompt_cache < 0:
        raise HamburgerError("--prompt-cache must be >= 0 (0: keep no prompt)")
    if lookup < 0:
        raise HamburgerError("--lookup must be >= 0 (0: no prompt lookup drafts)")
    if ngrams is not None and ngrams < 0:
        raise HamburgerError("--ngrams must be >= 0 (0: no n-gram drafts)")
    if draft_rows is not None and draft_rows < 0:
        raise HamburgerError("--draft-rows must be >= 0 (0: the verify modes never draft)")
    folding = parse_folding(fold)
    api_key = api_key or os.environ.get("HAMBURGER_API_KEY") or None
    model, tokenizer, _, reference = load_model(model_dir, dtype, base, True, device)
    if draft_rows is None and model.device.type == "cpu":
        draft_rows = CPU_DRAFT_ROWS
    name = served_model_name or Path(model_dir or "hamburger").resolve().name
    app = create_app(model, tokenizer, name, api_key, max_batch_size, max_queue, confidence, max_tokens,
                     max_request_bytes, prefill_chunk, mode, on_base(model, reference),
                     folding, PromptLookup(tokens=lookup) if lookup else None, draft_rows,  # (the scheduler validates)
                     model_ngrams(model, ngrams), fold_model(model_dir, folding, model, dtype, base),
                     prompt_cache)
    if api_key is None and host not in ("127.0.0.1", "localhost", "::1"):
        print(f"hamburger serve: warning: listening on {host} without --api-key", file=sys.stderr)
    print(f"hamburger serve: {name} on http://{host}:{port}/v1 (batches of up to {max_batch_size}, "
          f"queue {max_queue})", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=int(GRACE_S))
    DrainingServer(config, app, drain_timeout).run()
