"""``attncourse release``: student copies of the instructor notebooks
(nbgrader generate_assignment), written so that a learner's changes are never overwritten.

Its output is nbgrader's unchanged, so a student copy is exactly what an nbgrader course would hand
out. ``attncourse start`` makes the same files without nbgrader (``student.student_bytes``, held
byte for byte against nbgrader's by a test), so a learner's install needs no nbgrader.

A manifest of what was written (``.attncourse-release.json`` in the output folder) keeps a
learner's changes from ever being overwritten: a file is replaced only if it is byte-identical to
what was released there before, or with ``force`` (the old file is then backed up).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .course import Course
from .notebooks import (
    DEFAULT_SOURCE,
    UsageError,
    check_source,
    find_notebooks,
    read_notebook,
)
from .student import student_bytes

MANIFEST = ".attncourse-release.json"
BACKUPS = ".attncourse-backup"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` in one step, so an interrupted release leaves the old file or the new
    one.
    """
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)


def _backup(path: Path, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    stamp = f"{datetime.datetime.now():%Y%m%d-%H%M%S}"
    backup, n = folder / f"{path.stem}-{stamp}{path.suffix}", 1
    while backup.exists():
        n += 1
        backup = folder / f"{path.stem}-{stamp}-{n}{path.suffix}"
    shutil.copy2(path, backup)
    return backup


# --------------------------------------------------------------------------------- release


def _student_copies(notebooks) -> dict[str, bytes]:
    """{file name: student copy} made by nbgrader's ``generate_assignment``."""
    from tqdm.auto import tqdm

    with tempfile.TemporaryDirectory(prefix="attncourse-release-") as tmp:
        course = Course(Path(tmp) / "course")
        student = {}
        for nb_path in tqdm(
            notebooks,
            desc="releasing",
            unit="notebook",
            file=sys.stderr,
            disable=len(notebooks) < 2 or not sys.stderr.isatty(),  # a bar only on a terminal
            leave=False,
        ):
            course.add_source(nb_path)
            student[nb_path.name] = course.generate(nb_path).read_bytes()
    return student


def _read_manifest(path: Path) -> dict:
    """The release manifest at ``path`` ({} when there is none or it cannot be read)."""
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        return {}


def _plan(student: dict[str, bytes], out: Path, force: bool, echo) -> list[Released]:
    """What ``release`` would do with ``student`` in ``out``, said and returned, nothing written."""
    manifest = _read_manifest(out / MANIFEST)
    results = []
    for name, data in student.items():
        target = out / name
        if not target.exists():
            status = "written"
        elif _sha256(target.read_bytes()) == _sha256(data):
            status = "up to date"
        elif manifest.get(name) == _sha256(target.read_bytes()):
            status = "refreshed"
        else:
            status = "overwritten" if force else "kept"
        verb = {
            "written": "would write",
            "up to date": "up to date",
            "refreshed": "would refresh",
            "overwritten": "would overwrite",
            "kept": "would keep",
        }[status]
        results.append(Released(name, status, f"{verb} {target}"))
    for r in results:
        echo(r.message)
    return results


@dataclass
class Released:
    name: str
    status: str  # "written", "refreshed", "up to date", "kept", "overwritten"
    message: str


def release(
    notebooks,
    out: Path,
    *,
    force: bool = False,
    source: Path = DEFAULT_SOURCE,
    echo=print,
    nbgrader: bool = True,
    dry_run: bool = False,
) -> list[Released]:
    """Write the student version of each notebook into ``out``; never overwrite a learner's changes.

    A file is replaced only if it is byte-identical to what was released there before (the
    manifest ``out/.attncourse-release.json`` remembers that), or with ``force`` (the old file is
    then saved under ``out/.attncourse-backup/``). ``nbgrader=False`` makes the student copies
    with ``student.student_bytes`` (the same bytes, no nbgrader needed); ``dry_run`` writes
    nothing and says what it would do.
    """
    notebooks = find_notebooks(notebooks, source)
    for nb_path in notebooks:
        check_source(nb_path, read_notebook(nb_path))
    names = [p.name for p in notebooks]
    if len(set(names)) != len(names):
        raise UsageError(
            f"two notebooks share a file name: {sorted(n for n in names if names.count(n) > 1)}"
        )
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    if any(out.resolve() == p.resolve().parent for p in notebooks):
        raise UsageError(
            f"{out}: that is where the instructor notebooks are; write the student copies elsewhere"
        )

    student = (
        _student_copies(notebooks) if nbgrader else {p.name: student_bytes(p) for p in notebooks}
    )
    if dry_run:
        return _plan(student, out, force, echo)

    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    manifest = _read_manifest(manifest_path)
    results = []
    for name, data in student.items():
        target, new = out / name, _sha256(data)
        if not target.exists():
            _write(target, data)
            results.append(Released(name, "written", f"wrote      {target}"))
        else:
            current = _sha256(target.read_bytes())
            if current == new:
                results.append(Released(name, "up to date", f"up to date {target}"))
            elif manifest.get(name) == current:
                _write(target, data)
                results.append(
                    Released(
                        name, "refreshed", f"refreshed  {target} (unchanged since it was released)"
                    )
                )
            elif force:
                backup = _backup(target, out / BACKUPS)
                _write(target, data)
                results.append(
                    Released(
                        name,
                        "overwritten",
                        f"overwrote  {target} (--force; the old file is saved as {backup})",
                    )
                )
            else:
                results.append(
                    Released(
                        name,
                        "kept",
                        f"kept       {target}: it changed since it was released, so it "
                        f"is left as it is (--force overwrites it, keeping a backup)",
                    )
                )
                continue
        manifest[name] = new
    _write(manifest_path, (json.dumps(dict(sorted(manifest.items())), indent=1) + "\n").encode())
    for r in results:
        echo(r.message)
    return results
