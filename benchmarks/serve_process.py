"""A `hamburger serve` process on 127.0.0.1 for the serving benchmarks (load, TTFT, soak)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def write_record(out: str | None, record: dict) -> None:
    """Write a benchmark's raw record (settings, machine facts, results) as JSON, if `out` is given, and
    print its results."""
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record["results"], indent=2))


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds a process (its threads included) has used so far (/proc); None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_s() -> float | None:
    """CPU seconds the hypervisor gave other guests so far, summed over this machine's cores (/proc/stat's steal);
    None off Linux. A timed run's share of it tells a disturbed run from a slow one."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiny_checkpoint(out: Path) -> Path:
    """The test suite's tiny random checkpoint (with a chat template), written under `out`."""
    sys.path.insert(0, str(ROOT))
    from tests.helpers import make_char_tokenizer, save_tiny_chat_checkpoint

    return save_tiny_chat_checkpoint(out, make_char_tokenizer())


@contextmanager
def serving(model: Path | None, log: Path, *args: str, start_timeout: float = 300.0, launcher: str | None = None):
    """Start `hamburger serve` (the bundled model when `model` is None), wait for /health, yield
    (base URL, process); terminate it on exit. ``launcher``: a Python script that runs the CLI in its place
    (`python -m hamburger.cli`), e.g. with a piece of the server changed for an experiment."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    entry = ["-m", "hamburger.cli"] if launcher is None else [launcher]
    cmd = [sys.executable, *entry, "serve", "--port", str(port), "--log-level", "warning", *args]
    if model is not None:
        cmd += ["--model", str(model)]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        end = time.time() + start_timeout
        while True:
            if proc.poll() is not None or time.time() > end:
                sys.exit("the server did not start:\n" + log.read_text())
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
