"""`serve.openmp.release_pool`: the main thread's OpenMP workers go, and torch works on (in a fresh process, so that
the count of this process's threads means what it says)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="finds the runtime in /proc/self/maps")

SCRIPT = """
import os, threading, torch
from hamburger.serve.openmp import openmp_runtime, release_pool

def threads():
    return len(os.listdir("/proc/self/task"))

torch.set_num_threads(2)
torch.manual_seed(0)
a, b = torch.randn(256, 256), torch.randn(1 << 20)
before_matmul, before_sum = a @ a, (b * 2).sum()  # parallel regions in the main thread: its pool gets a worker
held = threads()
released = release_pool()
left = threads()
out = {}
worker = threading.Thread(target=lambda: out.update(matmul=a @ a, sum=(b * 2).sum()))
worker.start()
worker.join()
print(openmp_runtime() is not None, released, held - left,
      torch.equal(before_matmul, a @ a), torch.equal(before_sum, (b * 2).sum()),
      torch.equal(before_matmul, out["matmul"]), torch.equal(before_sum, out["sum"]))
"""


def test_release_pool_hands_back_the_main_threads_worker_and_torch_computes_the_same():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found, released, gone, *same = done.stdout.split()
    assert found == "True" and released == "True"
    assert gone == "1"  # 2 threads: the main thread and one worker, which is handed back
    assert same == ["True"] * 4  # after the release, in the main thread and in another, the same numbers


def test_release_pool_without_a_runtime_does_nothing(monkeypatch):
    from hamburger.serve import openmp

    monkeypatch.setattr(openmp, "openmp_runtime", lambda: None)
    assert openmp.release_pool() is False


def test_the_app_hands_back_its_starting_threads_pool_before_the_scheduler_decodes(checkpoint, monkeypatch):
    """`create_app`'s lifespan releases the pool of the thread that starts the app (`serve`'s main thread, which
    loaded the model) before the scheduler's thread starts, whoever runs the app (here the test client's thread)."""
    from fastapi.testclient import TestClient

    from hamburger.serve import openmp
    from hamburger.serve.app import create_app
    from hamburger.serve.scheduler import Scheduler

    calls = []
    monkeypatch.setattr(openmp, "release_pool", lambda: calls.append("release") or True)
    start = Scheduler.start
    monkeypatch.setattr(Scheduler, "start", lambda self: calls.append("scheduler") or start(self))
    app = create_app(checkpoint[1], checkpoint[2], "ckpt")
    assert calls == []
    with TestClient(app) as client:
        assert client.get("/health").status_code == 200
        assert calls == ["release", "scheduler"]
