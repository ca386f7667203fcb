"""Read a submitted notebook as untrusted input: its answers, and what is wrong with its structure.

A submission is matched to the release it was made from, cell by cell, by the nbgrader grade ids
of the answer (solution) and check (test) cells. What breaks an exercise costs that exercise, never
the notebook or the batch:

* an answer cell that is missing, turned into markdown or raw, whose nbgrader metadata changed, or
  that appears twice with different code (adjacent cells with the same answer's metadata are
  one answer split in two, as JupyterLab's "split cell" leaves it: they are read as one, in
  order);
* a check cell that was deleted, edited, or turned into another type (an exact copy is ignored);
* in an exercise's stretch of cells, a cell that is not a JSON object, whose ``metadata`` or
  ``metadata.nbgrader`` is not a dict, or whose grade id is not a string or is unknown to the
  release.

A malformed field costs the exercise whose stretch it is in, never the notebook. A file that is
not a readable notebook (not JSON, too large, nested too deep, no cell list) is one reason for
every exercise. Nothing is run here, and every step takes time in proportion to the file.

The reasons are said in the submission's language (its notebook's ``language``, which a Chinese
edition's notebook carries: ``attncourse.i18n.notebook_language``), and so is everything the
grader then says about it (``Submission.language``).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..i18n import notebook_language, say, speaking
from .assignment import Assignment, nbgrader_meta

MAX_BYTES = 32 << 20  # a submitted notebook larger than this is not read
MAX_CELL = 1 << 20  # an answer cell longer than this is not run


@dataclass
class Submission:
    answers: dict[str, str] = field(default_factory=dict)  # solution grade id -> source
    problems: dict[str, str] = field(default_factory=dict)  # exercise grade id -> why 0
    unreadable: str | None = None  # why the file could not be read at all
    language: str = "en"  # the notebook's language (``attncourse.i18n.LANGUAGES``)


# the reasons, in the submission's language (``attncourse.i18n.say``; ``{...}``: filled in)
NOT_AN_OBJECT = "a cell is not a JSON object"
METADATA_NOT_A_DICT = "a cell's metadata is not a dictionary"
NBGRADER_NOT_A_DICT = "a cell's nbgrader metadata is not a dictionary"
ID_NOT_A_STRING = "a cell's nbgrader grade id is not a string ({id})"
UNKNOWN_ID = "a cell carries the grade id {id}, unknown to the release"
ANSWER_CHANGED = "the answer cell {id} was changed into another kind of cell"
CHECK_CHANGED = "the check cell {id} was changed into another kind of cell"
CHECK_DELETED = "the check cell {id} was deleted"
CHECK_EDITED = "the check cell {id} was edited"
ANSWER_MISSING = "the answer cell {id} is missing"
ANSWER_TWICE = "the answer cell {id} appears twice, with different code"
ANSWER_TOO_LONG = "the answer cell {id} is longer than {size} KB"
SENTENCES = (
    NOT_AN_OBJECT,
    METADATA_NOT_A_DICT,
    NBGRADER_NOT_A_DICT,
    ID_NOT_A_STRING,
    UNKNOWN_ID,
    ANSWER_CHANGED,
    CHECK_CHANGED,
    CHECK_DELETED,
    CHECK_EDITED,
    ANSWER_MISSING,
    ANSWER_TWICE,
    ANSWER_TOO_LONG,
)


def _source(cell) -> str | None:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    return source if isinstance(source, str) else None


def _normal(source: str) -> str:
    """A check cell's visible code: a hidden-tests region (an instructor copy has one; it is never
    run from a submission) and trailing spaces do not count. Linear in the source's length,
    whatever it holds (no regular expression to backtrack)."""
    begin, end, kept, at = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS", [], 0
    while True:
        start = source.find(begin, at)
        stop = source.find(end, start + len(begin)) if start >= 0 else -1
        if stop < 0:
            kept.append(source[at:])
            break
        kept.append(source[at:start])
        at = stop + len(end)
    source = "".join(kept)
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _read(path: Path) -> bytes:
    """The file's bytes, never through a symbolic link, never from anything but a plain file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("it is not a plain file")
        if info.st_size > MAX_BYTES:
            raise ValueError(f"it is larger than {MAX_BYTES >> 20} MB")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ValueError(f"it is larger than {MAX_BYTES >> 20} MB")
    return data


def _cells(path: Path) -> tuple[list, str]:
    """The raw cells of a notebook file and its language, or ``ValueError`` saying why it cannot
    be read."""
    raw = _read(path)
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ValueError("it is nested too deep") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"it is not JSON ({type(error).__name__})") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise ValueError("it has no list of cells")
    return cells, notebook_language(data.get("metadata"))


def _nbgrader(cell):
    """(the cell's nbgrader metadata or None, what is malformed about it or None)."""
    if not isinstance(cell, dict):
        return None, say(NOT_AN_OBJECT)
    metadata = cell.get("metadata", {})
    if not isinstance(metadata, dict):
        return None, say(METADATA_NOT_A_DICT)
    if "nbgrader" not in metadata:
        return None, None
    meta = metadata["nbgrader"]
    if not isinstance(meta, dict):
        return None, say(NBGRADER_NOT_A_DICT)
    if not isinstance(meta.get("grade_id"), str):
        return None, say(ID_NOT_A_STRING, id=repr(meta.get("grade_id"))[:60])
    return meta, None


def read_submission(path: Path, release_cells: list, assignment: Assignment) -> Submission:
    """The answers of a submission and the structural problems of each exercise."""
    result = Submission()
    try:
        cells, result.language = _cells(Path(path))
    except (OSError, ValueError) as error:
        result.unreadable = f"not a readable notebook: {error}"
        return result
    with speaking(result.language):
        _read_answers(result, cells, release_cells, assignment)
    return result


def _read_answers(result: Submission, cells: list, release_cells: list, assignment) -> None:
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
        region.append(assignment.exercises[current] if current < len(order) else None)
        meta, _ = _nbgrader(cell)
        grade_id = meta["grade_id"] if meta else None
        if grade_id in exercise_of_test and grade_id not in seen_tests:
            seen_tests.add(grade_id)
            current = max(current, order.index(grade_id) + 1)

    found_answers: dict[str, list[tuple[int, str]]] = {}
    found_tests: dict[str, list] = {}
    for index, (cell, exercise) in enumerate(zip(cells, region)):
        meta, malformed = _nbgrader(cell)
        if malformed:
            fail(exercise, malformed)
            continue
        if meta is None:
            continue
        grade_id = meta["grade_id"]
        if grade_id not in released:
            fail(exercise, say(UNKNOWN_ID, id=repr(grade_id[:60])))
            continue
        release_cell = released[grade_id]
        owner = exercise_of_answer.get(grade_id) or exercise_of_test.get(grade_id)
        same_kind = cell.get("cell_type") == release_cell.get("cell_type") and all(
            meta.get(key) == nbgrader_meta(release_cell).get(key)
            for key in ("solution", "grade", "locked", "points")
        )
        source = _source(cell)
        if not same_kind or source is None:
            changed = ANSWER_CHANGED if grade_id in exercise_of_answer else CHECK_CHANGED
            fail(owner, say(changed, id=grade_id))
            continue
        if grade_id in exercise_of_answer:
            found_answers.setdefault(grade_id, []).append((index, source))
        elif grade_id in exercise_of_test:
            found_tests.setdefault(grade_id, []).append(source)

    for exercise in assignment.exercises:
        tests = found_tests.get(exercise.grade_id, [])
        expected = _normal(_source(released[exercise.grade_id]) or "")
        if not tests:
            fail(exercise, say(CHECK_DELETED, id=exercise.grade_id))
        elif any(len(t) > 4 * len(expected) + 10_000 or _normal(t) != expected for t in tests):
            fail(exercise, say(CHECK_EDITED, id=exercise.grade_id))
        for answer in exercise.answers:
            sources = _joined(found_answers.get(answer, []))
            if not sources:
                fail(exercise, say(ANSWER_MISSING, id=answer))
            elif len(set(sources)) > 1:
                fail(exercise, say(ANSWER_TWICE, id=answer))
            elif len(sources[0]) > MAX_CELL:
                fail(exercise, say(ANSWER_TOO_LONG, id=answer, size=MAX_CELL >> 10))
            else:
                result.answers[answer] = sources[0]


def _joined(found: list[tuple[int, str]]) -> list[str]:
    """The answer's code, one entry per run of adjacent cells (a split cell is one run)."""
    runs: list[list[str]] = []
    last = None
    for index, source in found:
        if last is not None and index == last + 1:
            runs[-1].append(source)
        else:
            runs.append([source])
        last = index
    return ["\n".join(part.rstrip("\n") for part in run) + "\n" for run in runs]
