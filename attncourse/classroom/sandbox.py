"""Run a submission's code where it can reach nothing that matters: a bubblewrap sandbox.

``Session`` starts ``attncourse.classroom.runner`` in a fresh sandbox and exchanges messages with
it. The sandbox (``bwrap``, Debian/Ubuntu package ``bubblewrap``) gives the process:

* new PID, network, IPC and UTS namespaces: no network, and every process it starts dies with it;
* a filesystem of its own: the system libraries, the Python installation and the installed
  ``attncourse`` read-only, an empty private ``/tmp``, and one empty writable working folder — the
  instructor's notebooks, the hidden tests and the gradebook are not there at all;
* an unprivileged user (run as root, the runner drops to a uid of its own before any submitted
  code runs), and limits on memory, processes, file size and CPU time.

``Session(sandbox=False)`` runs the same runner as a plain subprocess with the same limits where
the system allows them: only for work you trust (``attncourse grade --no-sandbox``).
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import protocol

WORKDIR = "/submission"  # the working folder, as the sandboxed process sees it
SANDBOX_UID = 61000  # + the worker's slot: each concurrent sandbox counts its processes apart
INSTALL_HINT = (
    "grading runs every submission in a bubblewrap sandbox, and `bwrap` was not found: install "
    "the package `bubblewrap` (Debian/Ubuntu: apt-get install bubblewrap), or pass --no-sandbox "
    "to grade without one (unsafe: only for work you trust)"
)


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot create its namespaces here."""


class Timeout(Exception):
    """The submission did not answer in time (the session is killed)."""


class Died(Exception):
    """The submission's process ended (or broke the protocol) before answering."""


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 3072  # address space of the runner
    processes: int = 64  # processes and threads of the sandbox's uid
    file_mb: int = 64  # largest file it may write
    cpu_seconds: int = 600  # CPU time of the whole session


def _set_limits(limits: Limits) -> None:
    """In the child, before exec: what the sandboxed process may use."""
    for name, value in (
        (resource.RLIMIT_AS, limits.memory_mb << 20),
        (resource.RLIMIT_NPROC, limits.processes),
        (resource.RLIMIT_FSIZE, limits.file_mb << 20),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_CORE, 0),
    ):
        with contextlib.suppress(ValueError, OSError):  # a hard limit already lower: keep it
            resource.setrlimit(name, (value, value))


def _read_only_paths() -> list[Path]:
    """What the runner needs to read: the system, the Python installation, the package."""
    import attncourse

    paths = [Path(p) for p in ("/usr", "/etc/ld.so.cache", "/etc/alternatives")]
    paths += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    paths.append(Path(attncourse.__file__).resolve().parent)
    paths += [Path(p) for p in sys.path if p and Path(p).is_dir() and "site-packages" in p]
    found = []
    for path in paths:
        path = path.resolve()
        if path.exists() and not any(path.is_relative_to(other) for other in found):
            found = [other for other in found if not other.is_relative_to(path)] + [path]
    return sorted(found)


def bwrap_command(workdir: Path, uid: int | None) -> list[str]:
    """The bubblewrap command line around the runner (see the module docstring)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(INSTALL_HINT)
    command = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    command += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if os.getuid() != 0:  # unprivileged: a user namespace maps us to nobody
        command += ["--unshare-user", "--uid", "65534", "--gid", "65534"]
    command += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    made = set()
    for path in _read_only_paths():
        for parent in reversed(path.parents[:-1]):  # parents readable by the dropped uid
            if parent not in made and not path.is_relative_to("/usr"):
                command += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        command += ["--ro-bind", str(path), str(path)]
    for link in ("lib", "lib64", "bin", "sbin"):
        if Path(f"/usr/{link}").exists() and Path(f"/{link}").is_symlink():
            command += ["--symlink", f"usr/{link}", f"/{link}"]
    command += ["--bind", str(workdir), WORKDIR, "--chdir", WORKDIR]
    command += ["--clearenv", "--setenv", "HOME", WORKDIR, "--setenv", "PATH", "/usr/bin"]
    if uid is not None and os.getuid() == 0:
        command += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return command


def check_sandbox() -> None:
    """Raise ``SandboxUnavailable`` unless a sandbox can be made here (tried once, quickly)."""
    with tempfile.TemporaryDirectory(prefix="attncourse-sandbox-check-") as tmp:
        command = bwrap_command(Path(tmp), None) + [sys.executable, "-I", "-c", "pass"]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SandboxUnavailable(f"bubblewrap could not start: {error}") from None
        if result.returncode != 0:
            raise SandboxUnavailable(
                "bubblewrap is installed but cannot create a sandbox here "
                f"({result.stderr.strip()[:300]}); --no-sandbox grades without one (unsafe)"
            )


class Session:
    """One running submission: ``request`` sends a message and waits for the answer."""

    def __init__(self, *, sandbox: bool, slot: int = 0, limits: Limits = Limits()):
        self.workdir = Path(tempfile.mkdtemp(prefix="attncourse-submission-"))
        uid = SANDBOX_UID + slot
        if os.getuid() == 0:
            os.chown(self.workdir, uid, uid)
        requests_read, self.requests = os.pipe()
        self.answers, answers_write = os.pipe()
        runner = [sys.executable, "-I", "-m", "attncourse.classroom.runner"]
        runner += [str(requests_read), str(answers_write)]
        if os.getuid() == 0:
            runner += ["--uid", str(uid)]
        command = (bwrap_command(self.workdir, uid) if sandbox else []) + runner
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            pass_fds=(requests_read, answers_write),
            preexec_fn=lambda: _set_limits(limits),
            start_new_session=True,
            cwd=self.workdir,
        )
        os.close(requests_read)
        os.close(answers_write)
        self.alive = True

    def request(self, header: dict, arrays=None, timeout: float = 60.0):
        """(answer header, arrays), or ``Timeout`` / ``Died`` (the session is then closed).

        Each request carries a fresh random id; an answer with another id (one the submitted code
        wrote itself) is skipped."""
        if not self.alive:
            raise Died("the session was closed")
        request_id = secrets.token_hex(8)
        try:
            protocol.send(self.requests, {**header, "id": request_id}, arrays)
        except (BrokenPipeError, OSError):
            self.close()
            raise Died("the submission's process had ended") from None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.answers], [], [], max(0.0, left))
            if not ready:
                self.close()
                raise Timeout(f"no answer within {timeout:g} s")
            try:
                answer, answer_arrays = protocol.receive(self.answers)
            except (EOFError, protocol.ProtocolError, OSError) as error:
                self.close()
                raise Died(str(error)) from None
            if answer.get("id") == request_id:
                return answer, answer_arrays

    def close(self) -> None:
        """Kill the sandbox and everything in it; remove its working folder."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        if self.alive:
            for fd in (self.requests, self.answers):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.alive = False
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
