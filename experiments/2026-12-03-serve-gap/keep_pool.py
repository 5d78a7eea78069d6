"""`python -m hamburger.cli` with `serve.openmp.release_pool` switched off: the server keeps its main thread's OpenMP
workers, as it did before session 58 (stage 1c's other arm, README.md)."""

import sys

from hamburger.serve import openmp

openmp.release_pool = lambda: False  # (looked up when the app starts, so it gets this one)

from hamburger.cli.main import main  # noqa: E402

sys.exit(main())
