"""The main thread's OpenMP workers, handed back before the server decodes in its scheduler thread.

PyTorch's CPU kernels run in OpenMP parallel regions, and GNU libgomp (the runtime of PyTorch's Linux wheels) keeps
one pool of worker threads for each thread that opens a region. While libgomp manages more threads than the machine
has CPUs, an idle worker spins only briefly and then sleeps, so every parallel region waits for its workers to wake.
`hamburger serve` loads the model in the main thread, which keeps its pool afterwards, and decodes in the scheduler's
thread, which starts a second pool. On a 2-core machine that makes 3 managed threads for 2 CPUs. The same decoding
loop then ran 1.3-1.5x slower in a second thread than in the main thread, using 1.4 cores instead of 2
(`experiments/2026-12-03-serve-gap/`). `release_pool` hands the calling thread's workers back with OpenMP 5.0's
`omp_pause_resource_all`. They start again if that thread opens another parallel region.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

RUNTIMES = ("libgomp", "libiomp5", "libomp")  # GNU, Intel, LLVM
OMP_PAUSE_SOFT = 1  # (omp_pause_resource_t: soft 1, hard 2; libgomp treats both alike on the host)


def openmp_runtime() -> ctypes.CDLL | None:
    """The OpenMP runtime this process has loaded (torch's), found by its file in /proc/self/maps; None when no
    runtime is loaded or the maps cannot be read (not Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            files = {line.split()[-1] for line in f if "/" in line}
    except OSError:
        return None
    for name in RUNTIMES:  # (libgomp.so.1, or a wheel's renamed copy such as libgomp-a34b3233.so.1)
        path = next((p for p in files if Path(p).name.startswith((name + ".so", name + "-"))), None)
        if path is not None:
            try:
                return ctypes.CDLL(path)  # (already loaded: the same library, not a second copy)
            except OSError:
                return None
    return None


def release_pool() -> bool:
    """Hand back the calling thread's OpenMP worker threads; True if the runtime did. Call it in a thread that has
    finished its torch work (the server's main thread, once the model is loaded): no parallel region may be open."""
    runtime = openmp_runtime()
    pause = getattr(runtime, "omp_pause_resource_all", None) if runtime is not None else None
    if pause is None:
        return False
    pause.argtypes, pause.restype = [ctypes.c_int], ctypes.c_int
    return pause(OMP_PAUSE_SOFT) == 0
