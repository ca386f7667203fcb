"""``attncourse grade``: headless grading of submissions with the hidden tests put back.

``generate_assignment`` on the matching instructor notebook (matched by file name), then ``nbgrader
autograde`` on the submission, which restores hidden tests and runs each cell with a timeout
(interrupting the kernel, then going on). Before that, ``integrity`` zeroes exercises whose test
cell was deleted or edited and neutralises answer cells that could tamper with the checks. The
learner's code runs in a Jupyter kernel (a separate process) whose working directory is inside
the temporary course.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from . import integrity
from .course import DEFAULT_TIMEOUT, Course, nbgrader_error
from .notebooks import (
    DEFAULT_SOURCE,
    NOTEBOOK_GLOB,
    UsageError,
    check_source,
    graded_cells,
    read_notebook,
)

# ----------------------------------------------------------------------------------- grade


@dataclass
class Exercise:
    grade_id: str
    points: float
    max_points: float
    note: str = ""


@dataclass
class Graded:
    submission: str
    notebook: str
    exercises: list[Exercise] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def points(self) -> float:
        return sum(e.points for e in self.exercises)

    @property
    def max_points(self) -> float:
        return sum(e.max_points for e in self.exercises)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(points=self.points, max_points=self.max_points, seconds=round(self.seconds, 1))
        return d


def _first_line(text: str, limit: int = 300) -> str:
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failure_notes(nb, timeout) -> dict[str, str]:
    """grade_id -> why its test failed, from the errors of the autograded notebook."""
    notes, errors = {}, []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell_errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        errors += cell_errors
        if integrity.is_test_cell(cell):
            if any(e.get("ename") == "CellTimeoutError" for e in errors):
                notes[cell.metadata.nbgrader["grade_id"]] = (
                    f"a cell ran longer than the {timeout} s limit (stopped)"
                )
            elif cell_errors:
                e = cell_errors[0]
                notes[cell.metadata.nbgrader["grade_id"]] = _first_line(
                    f"{e.get('ename')}: {e.get('evalue')}"
                )
            errors = []
    return notes


def _instructor_for(submission: Path, source: Path) -> Path:
    instructor = Path(source) / submission.name
    if not instructor.is_file():
        known = ", ".join(p.name for p in sorted(Path(source).glob(NOTEBOOK_GLOB))) or "none"
        raise UsageError(
            f"{submission}: no instructor notebook named {submission.name} in {source} "
            f"(submissions are matched by file name; known: {known})"
        )
    return instructor


def grade(
    submissions,
    *,
    source: Path = DEFAULT_SOURCE,
    timeout: int = DEFAULT_TIMEOUT,
    notebook_timeout: int | None = None,
    course_dir: Path | None = None,
    progress: bool | None = None,
    echo=print,
) -> list[Graded]:
    """Grade each submission against the instructor notebook of the same file name.

    timeout: seconds per cell; notebook_timeout: seconds for a whole notebook, after which the
    remaining cells get 1 s each (default ``max(600, 10 * timeout)``).
    """
    if not submissions:
        raise UsageError("no submissions given")
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    if notebook_timeout is not None and notebook_timeout <= 0:
        raise UsageError(
            f"--notebook-timeout must be a positive number of seconds, got {notebook_timeout}"
        )
    paths = [Path(s) for s in submissions]
    instructors = {}
    for p in paths:  # check every input before grading anything
        if not p.is_file():
            raise UsageError(f"{p}: no such submission")
        if p.suffix != ".ipynb":
            raise UsageError(f"{p}: not a notebook (expected a .ipynb file)")
        instructor = _instructor_for(p, source)
        if instructor.name not in instructors:
            nb = read_notebook(instructor)
            check_source(instructor, nb)
            if not graded_cells(nb):
                raise UsageError(
                    f"{instructor}: has no graded cells (nbgrader metadata grade: true), "
                    "nothing to grade"
                )
            instructors[instructor.name] = (instructor, nb)

    with contextlib.ExitStack() as stack:
        if course_dir is None:
            root = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="attncourse-grade-"))
            )
        else:
            root = Path(course_dir)
            if root.exists() and any(root.iterdir()):
                raise UsageError(f"{root}: --course-dir must be a new or empty folder")
        course = Course(root, timeout=timeout, notebook_timeout=notebook_timeout)
        releases = {}
        for name, (instructor, _) in instructors.items():
            course.add_source(instructor, kernelspec=True)
            releases[name] = read_notebook(course.generate(instructor))

        show = progress if progress is not None else len(paths) > 1
        bar = None
        if show:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(paths), desc="grading", unit="notebook", file=sys.stderr)
            echo = bar.write
        results = []
        for index, path in enumerate(paths, 1):
            instructor, instructor_nb = instructors[path.name]
            result = _grade_one(
                course, f"s{index:03d}", path, instructor_nb, releases[path.name], timeout
            )
            results.append(result)
            echo(format_result(result))
            if bar is not None:
                bar.update()
        if bar is not None:
            bar.close()
    return results


def _grade_one(
    course: Course, student: str, path: Path, instructor_nb, release_nb, timeout
) -> Graded:
    started = time.monotonic()
    result = Graded(submission=str(path), notebook=path.name)
    graded_ids = [c.metadata.nbgrader["grade_id"] for c in graded_cells(instructor_nb)]
    max_points = {
        c.metadata.nbgrader["grade_id"]: float(c.metadata.nbgrader.get("points", 0))
        for c in graded_cells(instructor_nb)
    }
    forced: dict[str, str] = {}
    try:
        nb = nbformat.read(path, as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no cells")
    except Exception as e:
        result.notes.append(_first_line(f"not a readable notebook ({type(e).__name__}: {e})"))
        result.exercises = [
            Exercise(g, 0.0, max_points[g], "the submission could not be read") for g in graded_ids
        ]
        result.seconds = time.monotonic() - started
        return result

    forced.update(integrity.changed_test_cells(nb, release_nb, instructor_nb))
    for finding in integrity.find_tampering(nb, release_nb, instructor_nb):
        cell = nb.cells[finding.cell]
        cell.source = integrity.neutralised_source(finding.problems)
        cell.outputs, cell.execution_count = [], None
        reason = _first_line(
            "an answer cell could change the checks, so it was not run: "
            + "; ".join(finding.problems),
            600,
        )
        if finding.grade_id is not None:
            forced.setdefault(finding.grade_id, reason)
        result.notes.append(f"cell {finding.cell + 1}: {reason}")

    course.submit(path.name, student, nb)
    outcome = course.autograde(path.name, student)
    notes: dict[str, str] = {}
    grades: dict[str, tuple[float, float, bool]] = {}
    if outcome.get("success"):
        grades = course.grades(path.name, student)
        with contextlib.suppress(Exception):
            notes = _failure_notes(
                nbformat.read(course.autograded(path.name, student), as_version=4), timeout
            )
    else:
        result.notes.append(
            _first_line("nbgrader could not grade it: " + nbgrader_error(outcome), 600)
        )

    for grade_id in graded_ids:
        score, maximum, manual = grades.get(grade_id, (0.0, max_points[grade_id], False))
        if grade_id in forced:
            result.exercises.append(Exercise(grade_id, 0.0, maximum, forced[grade_id]))
        elif not grades:
            result.exercises.append(Exercise(grade_id, 0.0, maximum, "not graded"))
        else:
            note = notes.get(grade_id, "")
            if manual:
                note = "needs manual grading" + (f"; {note}" if note else "")
            elif score < maximum and not note:
                note = "the test did not pass"
            result.exercises.append(Exercise(grade_id, score, maximum, note))
    result.seconds = time.monotonic() - started
    return result


def _number(x: float) -> str:
    return f"{x:g}"


def format_result(result: Graded) -> str:
    width = max([len(e.grade_id) for e in result.exercises] + [5])
    lines = [
        f"{result.submission}: {_number(result.points)} / {_number(result.max_points)} points "
        f"({result.seconds:.1f} s)"
    ]
    for e in result.exercises:
        note = f"   {e.note}" if e.note else ""
        lines.append(
            f"  {e.grade_id:<{width}}  {_number(e.points):>4} / {_number(e.max_points):<4}{note}"
        )
    lines.append(
        f"  {'total':<{width}}  {_number(result.points):>4} / {_number(result.max_points)}"
    )
    lines += [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)


def write_json(results: list[Graded], path: Path, timeout) -> None:
    data = {"timeout": timeout, "submissions": [r.as_dict() for r in results]}
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
