"""Run a submission's code where it can reach nothing that matters: a bubblewrap sandbox.

``Session`` starts ``attncourse.classroom.runner`` in a fresh sandbox and exchanges messages with
it. The sandbox (``bwrap``, Debian/Ubuntu package ``bubblewrap``) gives the process:

* new PID, network, IPC and UTS namespaces: no network, and every process it starts dies with it;
* a filesystem of its own: the system libraries, the Python installation and the installed
  ``attncourse`` read-only, with whatever the grader names as ``hidden`` (the instructor
  notebooks, which a wheel installs inside the package, and the submissions) covered by empty
  folders; and one writable tmpfs of its own of ``Limits.disk_mb``, ``/tmp``, that holds its
  working folder ``/submission``: nothing it writes reaches the host's disks;
* an unprivileged user (run as root, the runner drops to a uid of its own before any submitted
  code runs), and limits on memory, processes, file size and CPU time: memory and processes for
  all its processes together when the grader may make a cgroup (``attncourse.classroom.cgroup``),
  and per process in any case.

Every exchange with it has a deadline: a sandbox that stops reading the grader's requests or
stops writing its answer halfway costs a ``Timeout``, never a blocked grader.

The runner's environment is empty but for ``HOME``, ``PATH`` and ``ATTNCOURSE_LANG``, the
submission's language (``Session(lang=...)``), in which the refusals it makes are said.

``Session(sandbox=False)`` runs the same runner as a plain subprocess with the same per-process
limits where the system allows them: only for work you trust (``attncourse grade --no-sandbox``).
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import protocol
from .cgroup import Group

WORKDIR = "/submission"  # the working folder, as the sandboxed process sees it
WRITABLE = "/tmp/submission"  # where it is: inside the sandbox's own tmpfs
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
    memory_mb: int = 3072  # all processes together (cgroup), and each one's address space
    processes: int = 64  # processes and threads of the sandbox's uid (and cgroup)
    file_mb: int = 64  # largest file it may write
    disk_mb: int = 256  # its writable tmpfs, all files together
    cpu_seconds: int = 600  # CPU time of each process


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


def _masks(bound: list[Path], hidden) -> list[str]:
    """bwrap arguments that cover each ``hidden`` path found inside a ``bound`` one: an empty
    read-only folder over a folder, an empty file over a file. A folder that holds something
    the sandbox needs is left, and its files are covered one by one (name them in ``hidden``)."""
    args, done, resolved = [], set(), []
    for path in hidden:
        try:
            resolved.append(Path(path).resolve())
        except (OSError, RuntimeError):
            continue
    for path in sorted(set(resolved), key=lambda p: len(p.parts)):  # a folder before its files
        inside = any(path.is_relative_to(b) for b in bound)
        if not inside or any(path.is_relative_to(d) for d in done):
            continue
        if path.is_dir() and not any(b.is_relative_to(path) for b in bound):
            args += ["--perms", "0555", "--size", "4096", "--tmpfs", str(path)]
            args += ["--remount-ro", str(path)]
            done.add(path)
        elif path.is_file():
            args += ["--ro-bind", "/dev/null", str(path)]
            done.add(path)
    return args


def bwrap_command(uid: int | None, limits: Limits = Limits(), hidden=(), lang="en") -> list[str]:
    """The bubblewrap command line around the runner (see the module docstring)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(INSTALL_HINT)
    command = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    command += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if os.getuid() != 0:  # unprivileged: a user namespace maps us to nobody
        command += ["--unshare-user", "--uid", "65534", "--gid", "65534"]
    # its writable space first: a tmpfs of its own at /tmp (the read-only folders below may lie
    # inside /tmp on the host, and are bound over it), with the working folder inside
    size = str(limits.disk_mb << 20)
    command += ["--perms", "01777", "--size", size, "--tmpfs", "/tmp"]
    command += ["--proc", "/proc", "--dev", "/dev"]
    made = set()
    bound = _read_only_paths()
    for path in bound:
        for parent in reversed(path.parents[:-1]):  # parents readable by the dropped uid
            if parent not in made and not path.is_relative_to("/usr"):
                command += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        command += ["--ro-bind", str(path), str(path)]
    command += _masks(bound, hidden)
    for link in ("lib", "lib64", "bin", "sbin"):
        if Path(f"/usr/{link}").exists() and Path(f"/{link}").is_symlink():
            command += ["--symlink", f"usr/{link}", f"/{link}"]
    command += ["--perms", "01777", "--dir", WRITABLE, "--symlink", WRITABLE, WORKDIR]
    command += ["--chdir", WORKDIR]
    command += ["--clearenv", "--setenv", "HOME", WORKDIR, "--setenv", "PATH", "/usr/bin"]
    command += ["--setenv", "ATTNCOURSE_LANG", lang]
    if uid is not None and os.getuid() == 0:
        command += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return command


def check_sandbox() -> None:
    """Raise ``SandboxUnavailable`` unless a sandbox can be made here and the user the runner drops
    to can read the Python installation and attncourse in it (tried once, quickly)."""
    import numpy
    import torch

    import attncourse

    uid = SANDBOX_UID if os.getuid() == 0 else None
    needed = [str(Path(m.__file__).resolve()) for m in (attncourse, numpy, torch, protocol)]
    start = f"for path in {needed!r}:\n    open(path).close()\n"  # readable, without importing
    if uid is not None:
        start = f"import os\nos.setgroups([])\nos.setresgid({uid}, {uid}, {uid})\n" + (
            f"os.setresuid({uid}, {uid}, {uid})\n{start}"
        )
    command = bwrap_command(uid) + [sys.executable, "-I", "-c", start]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxUnavailable(f"bubblewrap could not start: {error}") from None
    if result.returncode != 0:
        raise SandboxUnavailable(
            "bubblewrap is installed but cannot run the grader's Python in a sandbox here "
            f"({result.stderr.strip()[-300:]}); the Python installation and attncourse must be "
            f"readable by any user (uid {uid}); --no-sandbox grades without one (unsafe)"
        )


class Session:
    """One running submission: ``request`` sends a message and waits for the answer.

    ``hidden``: paths the sandbox must not see even where they lie inside what it reads (the
    instructor notebooks, the submissions); ``lang``: the language of its refusals
    (``attncourse.i18n.LANGUAGES``)."""

    def __init__(
        self,
        *,
        sandbox: bool,
        slot: int = 0,
        limits: Limits = Limits(),
        hidden=(),
        group=True,
        lang: str = "en",
    ):
        uid = SANDBOX_UID + slot
        self.workdir = None
        if not sandbox:  # the runner's working folder on the host (trusted work only)
            self.workdir = Path(tempfile.mkdtemp(prefix="attncourse-submission-"))
        self.group = Group.make(limits.memory_mb, limits.processes) if group else None
        requests_read, self.requests = os.pipe()
        self.answers, answers_write = os.pipe()
        os.set_blocking(self.requests, False)  # a sandbox that stops reading cannot block us
        runner = [sys.executable, "-I", "-m", "attncourse.classroom.runner"]
        runner += [str(requests_read), str(answers_write)]
        if os.getuid() == 0:
            runner += ["--uid", str(uid)]
        command = (bwrap_command(uid, limits, hidden, lang) if sandbox else []) + runner
        env = None if sandbox else {**os.environ, "ATTNCOURSE_LANG": lang}
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        group_ = self.group

        def child() -> None:  # between fork and exec: limits, then the cgroup
            _set_limits(limits)
            if group_ is not None:
                group_.enter()

        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self.log,
                pass_fds=(requests_read, answers_write),
                preexec_fn=child,
                start_new_session=True,
                cwd=self.workdir or "/",
                env=env,
            )
        except BaseException:
            for fd in (requests_read, answers_write, self.requests, self.answers):
                os.close(fd)
            self.log.close()
            if self.group is not None:
                self.group.remove()
            raise
        os.close(requests_read)
        os.close(answers_write)
        self.alive, self.oom = True, False

    def request(self, header: dict, arrays=None, timeout: float = 60.0):
        """(answer header, arrays), or ``Timeout`` / ``Died`` (the session is then closed):
        the request written and the whole answer read within ``timeout`` seconds.

        Each request carries a fresh random id; an answer with another id (one the submitted code
        wrote itself) is skipped."""
        if not self.alive:
            raise Died("the session was closed")
        deadline = time.monotonic() + timeout
        request_id = secrets.token_hex(8)
        try:
            protocol.send(
                self.requests,
                {**header, "id": request_id},
                arrays,
                deadline,
                header_limit=protocol.MAX_MESSAGE,
            )
        except protocol.Deadline:
            self.close()
            raise Timeout(f"the request was not taken within {timeout:g} s") from None
        except (BrokenPipeError, OSError):
            self.close()
            raise Died("the submission's process had ended") from None
        while True:
            try:
                answer, answer_arrays = protocol.receive(self.answers, deadline=deadline)
            except protocol.Deadline:
                self.close()
                raise Timeout(f"no answer within {timeout:g} s") from None
            except (EOFError, protocol.ProtocolError, OSError) as error:
                self.close()
                raise Died(str(error)) from None
            if answer.get("id") == request_id:
                return answer, answer_arrays

    def out_of_memory(self) -> bool:
        """Did the kernel end one of its processes for want of memory (cgroup only)?"""
        if self.alive and self.group is not None:
            return self.group.oom_kills() > 0
        return self.oom

    def close(self) -> None:
        """Kill the sandbox and everything in it; remove its cgroup and working folder."""
        if self.group is not None:
            self.group.kill(rounds=1)  # once: the rest dies with the sandbox's first process
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        if self.alive:
            for fd in (self.requests, self.answers):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.alive = False
        self.log.close()
        if self.group is not None:
            self.oom = self.group.oom_kills() > 0
            self.group.remove()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
