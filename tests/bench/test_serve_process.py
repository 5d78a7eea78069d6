"""benchmarks/serve_process.py's measures of a timed load test: a process's CPU seconds and the hypervisor's steal."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.serve_process import process_cpu_s, steal_s

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads /proc")


def test_a_process_cpu_seconds_count_its_threads_work():
    """A child that spins for about 0.3 CPU seconds in a second thread shows them, this process's own count (the
    same reading of /proc as `os.times`) agrees with the kernel's, and a process that is gone reads as None."""
    spin = ("import threading, time\n"
            "def spin():\n    end = time.process_time() + 0.3\n    while time.process_time() < end: pass\n"
            "t = threading.Thread(target=spin); t.start(); t.join(); input()")
    child = subprocess.Popen([sys.executable, "-c", spin], stdin=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if process_cpu_s(child.pid) >= 0.3:
                break
            time.sleep(0.05)
        assert process_cpu_s(child.pid) >= 0.3
    finally:
        child.communicate("\n", timeout=30)
    assert process_cpu_s(child.pid) is None  # (reaped: no /proc entry)
    mine, times = process_cpu_s(os.getpid()), os.times()
    assert abs(mine - (times.user + times.system)) < 0.05


def test_steal_seconds_never_go_back():
    first = steal_s()
    assert first is not None and first >= 0 and steal_s() >= first
