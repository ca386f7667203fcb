"""Read a submitted notebook as untrusted input: its answers, and what is wrong with its structure.

A submission is matched to the release it was made from, cell by cell, by the nbgrader grade ids
of the answer (solution) and check (test) cells. What breaks an exercise costs that exercise, never
the notebook or the batch:

* an answer cell that is missing, turned into markdown or raw, whose nbgrader metadata changed, or
  that appears twice with different code;
* a check cell that was deleted, edited, or turned into another type (an exact copy is ignored);
* in an exercise's stretch of cells, a cell whose ``metadata.nbgrader`` is not a dict or names a
  grade id the release does not have.

A file that is not a readable notebook (not JSON, too large, nested too deep, no cell list) is one
reason for every exercise. Nothing is run here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .assignment import Assignment, nbgrader_meta

MAX_BYTES = 32 << 20  # a submitted notebook larger than this is not read
MAX_CELL = 1 << 20  # an answer cell longer than this is not run


@dataclass
class Submission:
    answers: dict[str, str] = field(default_factory=dict)  # solution grade id -> source
    problems: dict[str, str] = field(default_factory=dict)  # exercise grade id -> why 0
    unreadable: str | None = None  # why the file could not be read at all


def _source(cell) -> str | None:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    return source if isinstance(source, str) else None


def _normal(source: str) -> str:
    """A check cell's visible code: a hidden-tests region (an instructor copy has one; it is never
    run from a submission) and trailing spaces do not count."""
    source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", source, flags=re.S)
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _cells(path: Path) -> list:
    """The raw cells of a notebook file, or ``ValueError`` saying why it cannot be read."""
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"it is larger than {MAX_BYTES >> 20} MB")
    try:
        data = json.loads(path.read_bytes())
    except RecursionError:
        raise ValueError("it is nested too deep") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"it is not JSON ({type(error).__name__})") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise ValueError("it has no list of cells")
    return cells


def read_submission(path: Path, release_cells: list, assignment: Assignment) -> Submission:
    """The answers of a submission and the structural problems of each exercise."""
    result = Submission()
    try:
        cells = _cells(Path(path))
    except (OSError, ValueError) as error:
        result.unreadable = f"not a readable notebook: {error}"
        return result
    released = {nbgrader_meta(c)["grade_id"]: c for c in release_cells if nbgrader_meta(c)}
    exercise_of_test = {e.grade_id: e for e in assignment.exercises}
    exercise_of_answer = {a: e for e in assignment.exercises for a in e.answers}

    def fail(exercise, reason: str) -> None:
        if exercise is not None:
            result.problems.setdefault(exercise.grade_id, reason)

    # which exercise's stretch each cell is in: up to and including that exercise's check cell
    order = [e.grade_id for e in assignment.exercises]
    region, seen_tests = [], set()
    current = 0
    for cell in cells:
        meta = (
            cell.get("metadata", {}).get("nbgrader")
            if isinstance(cell.get("metadata"), dict)
            else None
        )
        region.append(assignment.exercises[current] if current < len(order) else None)
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if grade_id in exercise_of_test and grade_id not in seen_tests:
            seen_tests.add(grade_id)
            current = max(current, order.index(grade_id) + 1)

    found_answers: dict[str, list[str]] = {}
    found_tests: dict[str, list] = {}
    for cell, exercise in zip(cells, region):
        metadata = cell.get("metadata", {})
        if not isinstance(metadata, dict):
            fail(exercise, "a cell's metadata is not a dictionary")
            continue
        if "nbgrader" not in metadata:
            continue
        meta = metadata["nbgrader"]
        if not isinstance(meta, dict):
            fail(exercise, "a cell's nbgrader metadata is not a dictionary")
            continue
        grade_id = meta.get("grade_id")
        if grade_id not in released:
            fail(
                exercise,
                f"a cell carries the grade id {str(grade_id)[:60]!r}, unknown to the release",
            )
            continue
        release_cell = released[grade_id]
        owner = exercise_of_answer.get(grade_id) or exercise_of_test.get(grade_id)
        same_kind = cell.get("cell_type") == release_cell.get("cell_type") and all(
            meta.get(key) == nbgrader_meta(release_cell).get(key)
            for key in ("solution", "grade", "locked", "points")
        )
        source = _source(cell)
        if not same_kind or source is None:
            what = "answer" if grade_id in exercise_of_answer else "check"
            fail(owner, f"the {what} cell {grade_id} was changed into another kind of cell")
            continue
        if grade_id in exercise_of_answer:
            found_answers.setdefault(grade_id, []).append(source)
        elif grade_id in exercise_of_test:
            found_tests.setdefault(grade_id, []).append(source)

    for exercise in assignment.exercises:
        tests = found_tests.get(exercise.grade_id, [])
        expected = _normal(_source(released[exercise.grade_id]) or "")
        if not tests:
            fail(exercise, f"the check cell {exercise.grade_id} was deleted")
        elif any(_normal(t) != expected for t in tests):
            fail(exercise, f"the check cell {exercise.grade_id} was edited")
        for answer in exercise.answers:
            sources = found_answers.get(answer, [])
            if not sources:
                fail(exercise, f"the answer cell {answer} is missing")
            elif len(set(sources)) > 1:
                fail(exercise, f"the answer cell {answer} appears twice, with different code")
            elif len(sources[0]) > MAX_CELL:
                fail(exercise, f"the answer cell {answer} is longer than {MAX_CELL >> 10} KB")
            else:
                result.answers[answer] = sources[0]
    return result
