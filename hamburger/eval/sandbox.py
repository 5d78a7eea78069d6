"""Running untrusted Python (HumanEval completions) inside a real isolation boundary: bubblewrap.

Every program runs in a fresh bubblewrap sandbox (``bwrap``, Debian package ``bubblewrap``):
  * new user, PID, network, IPC and UTS namespaces: no network at all (not even the host's loopback
    or abstract sockets); it sees only its own processes and cannot make further user namespaces;
  * a new, read-only root that holds only /usr (with the /bin and /lib links), the loader cache, the
    Python interpreter's prefix and a minimal /dev, plus a private, size-capped /tmp as its working
    folder that vanishes with it: no write access anywhere else, no host sockets (/run is absent);
  * not as root: when hamburger runs as root it first becomes the unprivileged user ``nobody``
    (util-linux ``setpriv``); any other user stays itself (never root);
  * kernel limits on address space, CPU seconds, file size, open files and processes (util-linux
    ``prlimit`` inside the sandbox), plus a wall-clock timeout after which the whole process group
    is killed; the PID namespace and ``--die-with-parent`` take every child with it, even one that
    left the session, and no child outlives the program (the namespace ends when it exits).
No isolation, no execution: ``require()`` (called by ``run_python``) raises HamburgerError with one
line when bwrap (0.8 or newer), setpriv or prlimit is missing or cannot build the sandbox here. There
is no weaker fallback.

Environment: ``HAMBURGER_BWRAP`` names the bwrap binary (default ``bwrap`` on PATH);
``HAMBURGER_SANDBOX_PYTHON`` the interpreter run inside (default: this one, or /usr/bin/python3 when
``nobody`` cannot read this one, e.g. a pyenv Python under /root).
"""

from __future__ import annotations

import functools
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from hamburger.errors import HamburgerError

NOBODY = 65534  # uid and gid of `nobody` / `nogroup` on Debian-like systems
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
STDERR_TAIL = 4096  # bytes of stderr kept for the failure reason
INSTALL = "install the `bubblewrap` package (apt-get install bubblewrap; setup.sh does this) or set HAMBURGER_BWRAP"


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run."""

    timeout: float = 10.0  # wall-clock seconds; the CPU limit is one second more
    memory_mb: int = 1024  # address space
    tmp_mb: int = 64  # the private /tmp (working folder)
    file_mb: int = 16  # the largest file it may write (also caps its stderr)
    processes: int = 32  # processes and threads inside the sandbox
    open_files: int = 256


@dataclass(frozen=True)
class Result:
    """How a sandboxed program ended: exit code (None when killed by the timeout) and its stderr tail."""

    returncode: int | None
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def _tool(name: str, env_var: str | None = None) -> str:
    wanted = os.environ.get(env_var, name) if env_var else name
    found = shutil.which(wanted)
    if found is None:
        hint = INSTALL if name == "bwrap" else "install util-linux"
        raise HamburgerError(f"refusing to execute generated code: no isolation available ({name} {wanted!r} "
                             f"not found; {hint})")
    return found


def _readable_by_others(path: str) -> bool:
    """Whether an unprivileged stranger (``nobody``) can reach and read ``path``."""
    p = Path(path)
    for part in [*reversed(p.parents), p]:
        mode = os.stat(part).st_mode
        if not mode & stat.S_IXOTH:
            return False
    return bool(os.stat(p).st_mode & stat.S_IROTH)


def interpreter(switch_user: bool) -> str:
    """The Python run inside the sandbox (resolved), readable by the sandbox's user."""
    chosen = os.environ.get("HAMBURGER_SANDBOX_PYTHON")
    exe = os.path.realpath(shutil.which(chosen) or chosen) if chosen else os.path.realpath(sys.executable)
    if not chosen and switch_user and not _readable_by_others(_prefix(exe)) and os.path.exists("/usr/bin/python3"):
        exe = os.path.realpath("/usr/bin/python3")
    if not os.path.isfile(exe) or _prefix(exe) == "/":
        raise HamburgerError(f"the sandbox Python {exe!r} is not an interpreter in a PREFIX/bin folder; "
                             "set HAMBURGER_SANDBOX_PYTHON")
    return exe


def _prefix(exe: str) -> str:
    return os.path.dirname(os.path.dirname(exe))  # PREFIX/bin/pythonX.Y -> PREFIX


def command(limits: Limits) -> list[str]:
    """The full command line that runs ``python -I -`` (program on stdin) in the sandbox."""
    bwrap, prlimit = _tool("bwrap", "HAMBURGER_BWRAP"), _tool("prlimit")
    switch_user = os.geteuid() == 0
    python = interpreter(switch_user)
    cmd = [_tool("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"] if switch_user else []
    cmd += [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
    for link in ROOT_LINKS:
        if os.path.islink(link):
            cmd += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            cmd += ["--ro-bind", link, link]
    prefix = _prefix(python)
    if prefix != "/usr" and not prefix.startswith("/usr/"):
        cmd += ["--ro-bind", prefix, prefix]
    cmd += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache", "--proc", "/proc", "--dev", "/dev",
            "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/",
            "--chdir", "/tmp", "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "PYTHONHASHSEED", "0", "--",
            prlimit, f"--as={limits.memory_mb << 20}", f"--cpu={int(limits.timeout) + 1}",
            f"--fsize={limits.file_mb << 20}", f"--nofile={limits.open_files}", f"--nproc={limits.processes}",
            "--core=0", "--", python, "-I", "-"]
    return cmd


def _feed(pipe, data: bytes) -> None:
    """Write the program to the sandbox's stdin (a thread: a stuck reader cannot stall the timeout)."""
    try:
        pipe.write(data)
        pipe.close()
    except BrokenPipeError:
        pass


def _run(cmd: list[str], program: str, timeout: float) -> Result:
    """Run ``cmd`` in a new session with ``program`` on stdin; kill its process group on timeout.

    The exit is awaited on a pidfd (exact, where Popen.wait(timeout) polls in steps of up to 50 ms).
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                                env={"PATH": "/usr/bin:/bin"}, cwd="/", start_new_session=True)
        writer = threading.Thread(target=_feed, args=(proc.stdin, program.encode()), daemon=True)
        writer.start()
        exited: list = []
        try:
            pidfd = os.pidfd_open(proc.pid)
            try:
                exited = select.select([pidfd], [], [], timeout)[0]
            finally:
                os.close(pidfd)
        finally:
            if not exited:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # bwrap's namespace (every child in it) dies with it
                except ProcessLookupError:
                    pass
            proc.wait()
            writer.join()
        size = err.seek(0, os.SEEK_END)
        err.seek(max(0, size - STDERR_TAIL))
        tail = err.read().decode("utf-8", "replace")
    return Result(proc.returncode if exited else None, tail, time.perf_counter() - start)


@functools.lru_cache(maxsize=None)
def _probe(cmd: tuple[str, ...]) -> None:
    result = _run(list(cmd), "import os\nassert os.getuid() != 0\n", 30.0)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        raise HamburgerError(f"refusing to execute generated code: the bubblewrap sandbox does not work here "
                             f"({last[:200]})")


def require(limits: Limits = Limits()) -> None:
    """Raise HamburgerError (one line) unless the sandbox can run here; checked once per setting."""
    _probe(tuple(command(limits)))


def run_python(program: str, limits: Limits = Limits()) -> Result:
    """Run a Python program in the sandbox; raises HamburgerError (never runs it) without isolation."""
    cmd = command(limits)
    _probe(tuple(cmd))
    return _run(cmd, program, limits.timeout)
