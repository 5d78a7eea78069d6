"""Freed memory given back to the system. glibc's malloc keeps the pages of freed blocks for its own reuse, and a
server's KV caches and activations come and go in many sizes (the prompt cache's churn most of all), so a long-running
server's RSS creeps up under steady traffic. `Trimmer` calls glibc's `malloc_trim(0)`, which returns the heap's free
pages (a few ms), at most every so many seconds, between the scheduler's macro steps and after each batch; where the
C library is not glibc it does nothing. (`experiments/2026-12-06-server-memory/`: the RSS with and without it.)
"""

from __future__ import annotations

import ctypes
import time

TRIM_EVERY_S = 10.0  # seconds between trims, at most


def _malloc_trim():
    """glibc's `malloc_trim`, or None where the C library has none."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


class Trimmer:
    """Calls `malloc_trim(0)` when called, unless it did less than ``every`` seconds ago (0: never)."""

    def __init__(self, every: float = TRIM_EVERY_S, clock=time.monotonic):
        if every < 0:
            raise ValueError("every must be >= 0")
        self.every, self.clock = every, clock
        self._trim = _malloc_trim() if every else None
        self._last = clock()
        self.trims = 0  # (how many it made)

    def __call__(self) -> bool:
        """Trim if it is time; whether it did."""
        now = self.clock()
        if self._trim is None or now - self._last < self.every:
            return False
        self._trim(0)
        self._last, self.trims = now, self.trims + 1
        return True
