"""``attncourse progress``: which exercises of a learner's workspace pass, checked as the grader
checks them (in a sandbox when bubblewrap is there; it is the learner's own code either way).

One table in chapter order: a chapter the learner has not touched (its notebook is still the
student copy ``start`` made, byte for byte) is one line and is not graded, since every answer in
it is still the stub that raises ``NotImplementedError``; a chapter with work in it is graded and
lists its exercises under its line. ``progress NN`` shows one chapter, every note in full. A
progress bar shows on a terminal only.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .marking import clean
from .notebooks import NOTEBOOK_GLOB, UsageError, graded_cells, read_notebook
from .release import MANIFEST
from .student import student_bytes


@dataclass
class Chapter:
    path: Path  # the learner's notebook
    exercises: int
    max_points: float
    touched: bool
    points: float = 0.0
    passed: int = 0
    marks: list = field(default_factory=list)  # (grade_id, passed, note)
    notes: list = field(default_factory=list)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_untouched(path: Path, instructor: Path, manifest: dict) -> bool:
    """Whether the workspace notebook ``path`` is exactly the student copy of ``instructor``
    (as made now, or as ``start`` last wrote it)."""
    data = path.read_bytes()
    return manifest.get(path.name) == _sha256(data) or data == student_bytes(instructor)


def chapters_of(workspace: Path, source: Path, only=()) -> list[Path]:
    """The workspace's chapter notebooks that have exercises, in chapter order; ``only``: chapter
    numbers (``1``, ``01``) to keep."""
    found = [
        p
        for p in sorted(workspace.glob(NOTEBOOK_GLOB))
        if (source / p.name).is_file() and graded_cells(read_notebook(source / p.name))
    ]
    if not found:
        raise UsageError(f"{workspace}: no chapter notebooks with exercises in it")
    if not only:
        return found
    chosen = []
    for number in only:
        if not re.fullmatch(r"\d{1,2}", str(number)):
            raise UsageError(f"{number!r} is not a chapter number (00-99)")
        match = [p for p in found if p.name.startswith(f"{int(number):02d}_")]
        if not match:
            names = ", ".join(p.name[:2] for p in found)
            raise UsageError(
                f"no chapter {int(number):02d} with exercises in {workspace} ({names})"
            )
        chosen += [p for p in match if p not in chosen]
    return sorted(chosen)


def _short(grade_id: str, chapter: str) -> str:
    """``ch01_softmax_test`` (or ``test_softmax``) -> ``softmax``."""
    name = re.sub(rf"^ch{chapter}_", "", grade_id)
    return re.sub(r"^test_|_test$", "", name) or grade_id


def _number(x: float) -> str:
    return f"{x:g}"


def table(chapters: list[Chapter], *, detail: bool = False) -> list[str]:
    """The lines of the progress table."""
    width = max(len(c.path.stem) for c in chapters) + 2
    lines = [f"{'chapter':<{width}}{'passed':>9}{'points':>12}"]
    total = maximum = passed = exercises = 0.0
    for c in chapters:
        state = "" if c.touched else "   not started"
        lines.append(
            f"{c.path.stem:<{width}}{f'{c.passed}/{c.exercises}':>9}"
            f"{f'{_number(c.points)}/{_number(c.max_points)}':>12}{state}"
        )
        for grade_id, ok, note in c.marks:
            text = f"  {'✓' if ok else '✗'} {_short(grade_id, c.path.name[:2])}"
            if note and not ok:
                text += f": {clean(note, 600 if detail else 90)}"
            lines.append(text)
        lines += [f"  note: {clean(n, 600 if detail else 90)}" for n in c.notes]
        total, maximum = total + c.points, maximum + c.max_points
        passed, exercises = passed + c.passed, exercises + c.exercises
    if len(chapters) > 1:
        lines.append(
            f"{'in all':<{width}}{f'{passed:g}/{exercises:g}':>9}"
            f"{f'{_number(total)}/{_number(maximum)}':>12}"
        )
    return lines


def progress(workspace: Path, *, source: Path, chapters=(), echo=print, bar=None) -> list:
    """Check the exercises of ``workspace`` (the chapters numbered in ``chapters``, or all) and
    print the table; returns the ``Chapter`` rows. ``bar``: show a progress bar while grading
    (default: when stderr is a terminal)."""
    workspace, source = Path(workspace), Path(source)
    if not workspace.is_dir():
        raise UsageError(f"{workspace}: no workspace here (make it with `attncourse start`)")
    paths = chapters_of(workspace, source, chapters)
    try:
        manifest = json.loads((workspace / MANIFEST).read_text())
    except (OSError, ValueError):
        manifest = {}
    rows = []
    for path in paths:
        cells = graded_cells(read_notebook(source / path.name))
        points = sum(float(c.metadata.nbgrader.get("points", 0)) for c in cells)
        touched = not is_untouched(path, source / path.name, manifest)
        rows.append(Chapter(path, len(cells), points, touched))
    to_grade = [r for r in rows if r.touched]
    if to_grade:
        _grade(to_grade, source, sys.stderr.isatty() if bar is None else bar)
    for line in table(rows, detail=bool(chapters)):
        echo(line)
    return rows


def _grade(rows: list[Chapter], source: Path, bar: bool) -> None:
    from tqdm.auto import tqdm

    from .grade import grade
    from .sandbox import SandboxUnavailable, check_sandbox

    try:
        check_sandbox()
        sandbox = True
    except SandboxUnavailable:
        sandbox = False  # your own code: no sandbox needed to check it
    with tqdm(
        total=len(rows), desc="checking", unit="chapter", file=sys.stderr, disable=not bar
    ) as shown:
        results = grade(
            [r.path for r in rows],
            source=source,
            sandbox=sandbox,
            progress=False,
            echo=lambda _: shown.update(),
        )
    for row, result in zip(rows, results):
        row.points = result.points
        row.marks = [(e.grade_id, e.points >= e.max_points, e.note) for e in result.exercises]
        row.passed = sum(ok for _, ok, _ in row.marks)
        row.notes = list(result.notes)
