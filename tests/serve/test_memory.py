"""`serve/memory.py`: freed memory given back to the system, at most every so many seconds."""

import ctypes

import psutil
import pytest

from hamburger.serve.memory import Trimmer, _malloc_trim


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_it_trims_at_most_every_so_many_seconds():
    clock = Clock()
    trim = Trimmer(10, clock)
    done = []
    for now in (100, 105, 110, 115, 119.9, 120, 135):
        clock.now = now
        done.append(trim())
    assert done == [False, False, True, False, False, True, True] and trim.trims == 3
    never = Trimmer(0, clock)
    clock.now += 1000
    assert not never() and never.trims == 0
    with pytest.raises(ValueError):
        Trimmer(-1)


@pytest.mark.skipif(_malloc_trim() is None, reason="not glibc")
def test_a_trim_gives_back_what_freed_blocks_kept():
    """Blocks of the heap freed below one still in use stay in the RSS until a trim gives their pages back."""
    malloc, free = ctypes.CDLL("libc.so.6").malloc, ctypes.CDLL("libc.so.6").free
    malloc.restype, free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    rss = lambda: psutil.Process().memory_info().rss / 2 ** 20  # noqa: E731
    blocks = [malloc(64 << 10) for _ in range(2048)]  # 128 MiB in blocks below the mmap threshold: on the heap
    for block in blocks:
        ctypes.memset(block, 1, 64 << 10)  # (touched: in the RSS)
    for block in blocks[:-1]:  # (the last stays in use, above them: the heap's top cannot shrink)
        free(block)
    kept = rss()
    trim = Trimmer(1, Clock())
    trim.clock.now += 1
    assert trim()
    assert kept - rss() > 64, (kept, rss())
    free(blocks[-1])
