"""The HumanEval sandbox: known escapes leave no trace outside it, limits hold, no isolation means no run.

Every escape is also run once *without* the sandbox (as a control), to show that it would leave its
trace: the folder the tests watch is world-writable, so only the sandbox stops them.
"""

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hamburger.errors import HamburgerError
from hamburger.eval.sandbox import Limits, command, require, run_python
from hamburger.eval.scorers import humaneval_program, run_sandboxed
from tests.helpers import ESCAPE_ACTIONS, PROBLEM, escape_code


@pytest.mark.parametrize("name", sorted(ESCAPE_ACTIONS))
def test_escape_leaves_no_trace(outside, name):
    program = humaneval_program(PROBLEM, "    return a + b\n") + escape_code(ESCAPE_ACTIONS[name], outside)
    ok, reason = run_sandboxed(program, timeout=5)
    assert not ok and reason.startswith("tried"), reason  # the escape ran, after the honest check passed
    assert outside.traces() == []
    # control: the same program without the sandbox does leave its trace, so the check above is not vacuous
    subprocess.run([sys.executable, "-I", "-"], input=program, text=True, capture_output=True, timeout=10)
    assert outside.traces() != []


def test_honest_program_passes_and_may_write_its_own_folder():
    program = "open('scratch.txt', 'w').write('x')\nassert open('scratch.txt').read() == 'x'\n"
    assert run_sandboxed(humaneval_program(PROBLEM, "    return a + b\n") + program) == (True, "passed")


def test_a_program_larger_than_a_pipe_buffer_runs():
    assert run_sandboxed(("#" * 79 + "\n") * 30_000 + "assert 1 + 1 == 2\n") == (True, "passed")


def test_only_its_private_tmp_is_writable():
    """Not even the sandbox's own root, /etc or /dev (unbounded memory-backed folders) take writes."""
    program = ("import os\nfor d in ['/', '/etc', '/dev', '/dev/shm', '/usr', '/proc', '/bin']:\n"
               "    try:\n        open(os.path.join(d, 'probe'), 'w')\n    except OSError:\n        continue\n"
               "    raise SystemExit('wrote to ' + d)\n"
               "open('/tmp/probe', 'w').write('x')\nopen('/dev/null', 'w').write('x')\n")
    assert run_sandboxed(program) == (True, "passed")


def find_process(marker: str) -> int | None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return int(pid)
        except OSError:
            pass
    return None


def test_timeout_kills_every_child_and_nothing_runs_as_root():
    """A completion forks a sleeper in its group and one in a new session, then spins: all of it dies."""
    same, detached = (f"{random.randint(10**6, 10**7)}.5" for _ in range(2))
    program = ("import os\n"
               f"if os.fork() == 0:\n    os.execv('/bin/sleep', ['sleep', '{same}'])\n"
               f"if os.fork() == 0:\n    os.setsid()\n    os.execv('/bin/sleep', ['sleep', '{detached}'])\n"
               "while True:\n    pass\n")
    result = {}
    worker = threading.Thread(target=lambda: result.update(r=run_python(program, Limits(timeout=3))))
    start = time.monotonic()
    worker.start()
    pids = {}
    while len(pids) < 2 and time.monotonic() - start < 10:
        pids = {m: p for m in (same, detached) if (p := find_process(m)) is not None}
        time.sleep(0.05)
    assert len(pids) == 2, "the sleepers were never seen running"
    for pid in pids.values():  # real, effective, saved and fs uid of the sandboxed process, seen from outside
        uids = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Uid:"))
        assert "0" not in uids.split()[1:], uids
    worker.join(20)
    assert result["r"].timed_out and time.monotonic() - start < 10
    time.sleep(0.2)
    assert find_process(same) is None and find_process(detached) is None


def test_memory_limit():
    ok, reason = run_sandboxed("x = bytearray(1536 << 20)\n")  # default limit: 1 GiB of address space
    assert not ok and "MemoryError" in reason
    small = run_python("x = bytearray(300 << 20)\n", Limits(memory_mb=256))
    assert small.returncode != 0 and "MemoryError" in small.stderr
    assert run_python("x = bytearray(300 << 20)\n", Limits(memory_mb=1024)).returncode == 0


def test_private_tmp_is_capped():
    ok, reason = run_sandboxed("open('/tmp/big', 'wb').write(b'x' * (100 << 20))\n")
    assert not ok and ("No space left" in reason or "File too large" in reason or "Errno 27" in reason), reason


@pytest.mark.parametrize("tool", ["missing", "broken"])
def test_no_isolation_means_no_execution(tmp_path, monkeypatch, tool):
    marker = tmp_path / "ran"
    fake = tmp_path / "missing-bwrap" if tool == "missing" else Path("/bin/false")
    monkeypatch.setenv("HAMBURGER_BWRAP", str(fake))
    with pytest.raises(HamburgerError, match="refusing to execute generated code"):
        run_sandboxed(f"open({str(marker)!r}, 'w')\n")
    with pytest.raises(HamburgerError, match="refusing"):
        require()
    assert not marker.exists()


def test_command_shape():
    cmd = command(Limits(timeout=4, memory_mb=512))
    bwrap = cmd.index(next(c for c in cmd if c.endswith("bwrap")))
    assert {"--unshare-all", "--unshare-user", "--die-with-parent", "--disable-userns"} <= set(cmd[bwrap:])
    assert "--bind" not in cmd and "--share-net" not in cmd  # nothing writable from the host, no network
    assert f"--as={512 << 20}" in cmd and "--cpu=5" in cmd
    assert (cmd[0].endswith("setpriv")) == (os.geteuid() == 0)
