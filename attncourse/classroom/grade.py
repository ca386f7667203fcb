"""``attncourse grade``: a class's submissions graded headless, in parallel, outside their reach.

Each submission is matched by file name to an instructor notebook and marked by
``attncourse.classroom.marking`` in a sandbox of its own, ``jobs`` at a time; a submission that
cannot be read, hangs or crashes costs only its own exercises, never the batch. The results are
printed as they come, and written as JSON (``write_json``), as a CSV table with one row per
student (``write_csv``) and as an HTML report per submission (``attncourse.classroom.feedback``).

The student of a submission is named by its folder: ``submitted/<student>/<assignment>/NN.ipynb``
(nbgrader's layout) or ``<student>/NN.ipynb``.
"""

from __future__ import annotations

import concurrent.futures
import csv
import json
import os
import queue
import sys
import tempfile
from pathlib import Path

from . import assignment as assignments
from .course import DEFAULT_TIMEOUT, Course
from .marking import Graded, Mark, clean, mark
from .notebooks import (
    DEFAULT_SOURCE,
    NOTEBOOK_GLOB,
    UsageError,
    check_source,
    graded_cells,
    read_notebook,
)
from .sandbox import Limits, SandboxUnavailable, check_sandbox


def instructor_for(submission: Path, source: Path) -> Path:
    instructor = Path(source) / submission.name
    if not instructor.is_file():
        known = ", ".join(p.name for p in sorted(Path(source).glob(NOTEBOOK_GLOB))) or "none"
        raise UsageError(
            f"{submission}: no instructor notebook named {submission.name} in {source} "
            f"(submissions are matched by file name; known: {known})"
        )
    return instructor


def student_of(path: Path) -> str:
    """``submitted/<student>/<assignment>/<notebook>`` or ``<student>/<notebook>``."""
    parent = path.parent
    name = parent.parent.name if parent.name == path.stem and parent.parent.name else parent.name
    return clean(name or path.stem, 80)


def prepare(notebooks: dict[str, Path]) -> dict[str, tuple]:
    """{file name: (Assignment, released cells)}: each instructor notebook read, its student
    version made by nbgrader (what submissions are compared with)."""
    prepared = {}
    with tempfile.TemporaryDirectory(prefix="attncourse-grade-") as tmp:
        course = Course(Path(tmp) / "course")
        for name, instructor in notebooks.items():
            nb = read_notebook(instructor)
            check_source(instructor, nb)
            if not graded_cells(nb):
                raise UsageError(f"{instructor}: has no graded cells, nothing to grade")
            course.add_source(instructor)
            released = read_notebook(course.generate(instructor))
            prepared[name] = (assignments.read(instructor), [dict(c) for c in released.cells])
    return prepared


def _safely(path: Path, student: str, prepared, slots: queue.Queue, **options) -> Graded:
    """``mark`` one submission; whatever goes wrong stays in its own result."""
    assignment, release_cells = prepared
    slot = slots.get()
    try:
        return mark(path, student, assignment, release_cells, slot=slot, **options)
    except Exception as error:  # the grader's own failure: this submission only
        result = Graded(str(path), assignment.path.name, student)
        note = clean(f"not graded, the grader failed on it: {type(error).__name__}: {error}")
        result.exercises = [Mark(e.grade_id, 0.0, e.points, note) for e in assignment.exercises]
        return result
    finally:
        slots.put(slot)


def grade(
    submissions,
    *,
    source: Path = DEFAULT_SOURCE,
    timeout: float = DEFAULT_TIMEOUT,
    notebook_timeout: float | None = None,
    jobs: int | None = None,
    sandbox: bool = True,
    limits: Limits = Limits(),
    progress: bool | None = None,
    echo=print,
) -> list[Graded]:
    """Grade each submission against the instructor notebook of the same file name, ``jobs`` at
    a time (default: one per CPU core); results in the order given."""
    if not submissions:
        raise UsageError("no submissions given")
    if timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    if notebook_timeout is not None and notebook_timeout <= 0:
        raise UsageError(f"--notebook-timeout must be positive, got {notebook_timeout}")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    paths = [Path(s) for s in submissions]
    notebooks = {}
    for p in paths:  # check every input before grading anything
        if not p.is_file():
            raise UsageError(f"{p}: no such submission")
        if p.suffix != ".ipynb":
            raise UsageError(f"{p}: not a notebook (expected a .ipynb file)")
        notebooks.setdefault(p.name, instructor_for(p, source))
    if sandbox:
        try:
            check_sandbox()
        except SandboxUnavailable as error:
            raise UsageError(str(error)) from None
    prepared = prepare(notebooks)

    from tqdm.auto import tqdm

    show = progress if progress is not None else len(paths) > 1
    bar = tqdm(total=len(paths), desc="grading", unit="notebook", file=sys.stderr, disable=not show)
    write = bar.write if show else echo
    slots: queue.Queue = queue.Queue()
    for slot in range(jobs):
        slots.put(slot)
    options = {"sandbox": sandbox, "timeout": timeout, "budget": notebook_timeout, "limits": limits}
    results: list[Graded | None] = [None] * len(paths)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(_safely, p, student_of(p), prepared[p.name], slots, **options): i
            for i, p in enumerate(paths)
        }
        for future in concurrent.futures.as_completed(futures):
            result = results[futures[future]] = future.result()
            write(format_result(result))
            bar.update()
    bar.close()
    return results


def _number(x: float) -> str:
    return f"{x:g}"


def format_result(result: Graded) -> str:
    width = max([len(e.grade_id) for e in result.exercises] + [5])
    lines = [
        f"{clean(result.submission, 300)} ({result.student}): {_number(result.points)} / "
        f"{_number(result.max_points)} points ({result.seconds:.1f} s)"
    ]
    for e in result.exercises:
        note = f"   {clean(e.note, 300)}" if e.note else ""
        lines.append(
            f"  {e.grade_id:<{width}}  {_number(e.points):>4} / {_number(e.max_points):<4}{note}"
        )
    lines.append(
        f"  {'total':<{width}}  {_number(result.points):>4} / {_number(result.max_points)}"
    )
    lines += [f"  note: {clean(n, 300)}" for n in result.notes]
    return "\n".join(lines)


def write_json(results: list[Graded], path: Path, timeout) -> None:
    data = {"timeout": timeout, "submissions": [r.as_dict() for r in results]}
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def write_csv(results: list[Graded], path: Path) -> None:
    """One row per student, one column per exercise (every notebook's), then the total."""
    columns, rows = [], {}
    for result in results:
        row = rows.setdefault(result.student, {})
        for e in result.exercises:
            if e.grade_id not in columns:
                columns.append(e.grade_id)
            row[e.grade_id] = _number(e.points)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *columns, "total"])
        for student, row in rows.items():
            total = sum(float(row.get(c, 0)) for c in columns)
            writer.writerow([student, *(row.get(c, "") for c in columns), _number(total)])
