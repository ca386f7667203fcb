"""One memory limit for all of a sandbox's processes together: a control group of its own.

``Group.make(limits)`` creates a cgroup below the grader's own and sets its limits: with cgroup v2
(``memory.max``, no swap, ``pids.max``) where the memory controller is there for the grader's
cgroup to hand down, else in cgroup v1's memory hierarchy (``memory.limit_in_bytes`` and
``memory.memsw.limit_in_bytes``) and its pids hierarchy. It is None where no group can be made
(the grader is not root and nothing was delegated to it): then only the per-process limits of
``attncourse.classroom.sandbox.Limits`` hold, and ``available()`` says so.

A sandbox enters its group before it execs (``enter``, in the child), so every process it starts
is in it; ``kill`` ends them all at once and ``remove`` deletes the group. The pages a sandbox
writes to its tmpfs count against the same limit.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

_COUNTER = itertools.count()
_probed: str | None | bool = False  # what available() found, once


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(filesystem type, mount point, mount root, super options) of the cgroup mounts."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, rest = before.split(), after.split()
        if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            found.append((rest[0], fields[4], fields[3], set(rest[2].split(","))))
    return found


def _own() -> dict[str, str]:
    """{controller or "" (v2): the grader's cgroup path} from /proc/self/cgroup."""
    found = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                found[controller] = parts[2]
    return found


def _where(mount: str, root: str, path: str) -> Path | None:
    if root != "/" and not (path == root or path.startswith(root.rstrip("/") + "/")):
        return None
    relative = path[len(root) :] if root != "/" else path
    return Path(mount) / relative.lstrip("/")


def _write(path: Path, value: str) -> None:
    path.write_text(value)


class Group:
    """A cgroup (v2) or a pair of cgroups (v1: memory, pids) holding one sandbox."""

    def __init__(self, version: str, memory: Path, pids: Path | None):
        self.version, self.memory, self.pids = version, memory, pids

    @property
    def folders(self) -> list[Path]:
        return [p for p in (self.memory, self.pids) if p is not None]

    @classmethod
    def make(cls, memory_mb: int, processes: int) -> Group | None:
        """A group with these limits, or None where none can be made here."""
        name = f"attncourse-{os.getpid()}-{next(_COUNTER)}"
        for make in (cls._v2, cls._v1):
            try:
                group = make(name, memory_mb << 20, processes)
            except OSError:
                group = None
            if group is not None:
                return group
        return None

    @classmethod
    def _v2(cls, name: str, memory: int, processes: int) -> Group | None:
        own = _own().get("")
        mount = next(((m, r) for kind, m, r, _ in _mounts() if kind == "cgroup2"), None)
        if own is None or mount is None:
            return None
        parent = _where(mount[0], mount[1], own)
        if parent is None or "memory" not in (parent / "cgroup.controllers").read_text().split():
            return None
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if "memory" not in enabled:
            _write(parent / "cgroup.subtree_control", "+memory")  # may be refused: then None
        with contextlib.suppress(OSError):
            if "pids" not in enabled:
                _write(parent / "cgroup.subtree_control", "+pids")
        folder = parent / name
        folder.mkdir()
        group = cls("v2", folder, None)
        try:
            _write(folder / "memory.max", str(memory))
            with contextlib.suppress(OSError):
                _write(folder / "memory.swap.max", "0")
            with contextlib.suppress(OSError):
                _write(folder / "pids.max", str(processes))
        except OSError:
            group.remove()
            return None
        return group

    @classmethod
    def _v1(cls, name: str, memory: int, processes: int) -> Group | None:
        own, mounts = _own(), [(m, r, o) for kind, m, r, o in _mounts() if kind == "cgroup"]
        folders = {}
        for controller in ("memory", "pids"):
            mount = next(((m, r) for m, r, options in mounts if controller in options), None)
            if mount is None or controller not in own:
                continue
            parent = _where(mount[0], mount[1], own[controller])
            if parent is not None and parent.is_dir():
                folders[controller] = parent / name
        if "memory" not in folders:
            return None
        folders["memory"].mkdir()
        group = cls("v1", folders["memory"], None)
        try:
            _write(folders["memory"] / "memory.limit_in_bytes", str(memory))
            swap = folders["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():
                _write(swap, str(memory))
            if "pids" in folders:
                folders["pids"].mkdir()
                group.pids = folders["pids"]
                _write(folders["pids"] / "pids.max", str(processes))
        except OSError:
            group.remove()
            return None
        return group

    # -------------------------------------------------------------------------------- use
    def enter(self) -> None:
        """In the sandbox's process, before it execs: join the group (with everything it will
        start). Only system calls: this runs between fork and exec."""
        for folder in self.folders:
            fd = os.open(str(folder / "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def oom_kills(self) -> int:
        """How many processes the kernel ended for want of memory in the group."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            for line in (self.memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def kill(self, rounds: int = 50) -> None:
        """End every process in the group (``rounds``: how often to look again for the ones
        that were still starting)."""
        if self.version == "v2" and (self.memory / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(self.memory / "cgroup.kill", "1")
            return
        for _ in range(rounds):
            pids = []
            for folder in self.folders:
                with contextlib.suppress(OSError, ValueError):
                    pids += [int(p) for p in (folder / "cgroup.procs").read_text().split()]
            if not pids:
                return
            for pid in set(pids):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> None:
        """Delete the group (its processes ended first)."""
        self.kill()
        for folder in self.folders:
            for _ in range(100):  # the kernel lets go of the last process a moment later
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def available() -> str | None:
    """ "cgroup v2" or "cgroup v1" if a memory limit for a whole sandbox can be set here (tried
    once), else None."""
    global _probed
    if _probed is False:
        group = Group.make(64, 8)
        _probed = None if group is None else f"cgroup {group.version}"
        if group is not None:
            group.remove()
    return _probed
