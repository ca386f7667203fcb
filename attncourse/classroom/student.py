"""A student copy of an instructor notebook, made without nbgrader: what ``attncourse start`` puts
into a learner's workspace, and what ``attncourse progress`` compares the workspace with.

It applies, in nbgrader's order, the steps of nbgrader's ``generate_assignment`` that change a
notebook (``LockCells``, ``ClearSolutions``, ``ClearOutput``, ``ComputeChecksums``,
``ClearHiddenTests``, ``ClearMarkScheme``, ``ComputeChecksums``) with nbgrader's default settings,
and writes the result as nbgrader does. A test holds its output byte for byte against
``generate_assignment``'s for every chapter, so a workspace made by ``start`` is exactly what
``attncourse release`` (which runs nbgrader itself) and an nbgrader course hand out. What it
leaves to nbgrader: the gradebook, and the header and footer notebooks an nbgrader course may
configure. A learner's install needs no nbgrader for it (that is the ``classroom`` extra).
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path

import nbformat

from .notebooks import UsageError, check_source, read_notebook

CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # nbgrader's python stub
TEXT_STUB = "YOUR ANSWER HERE"
SOLUTION = ("BEGIN SOLUTION", "END SOLUTION")
HIDDEN_TESTS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
MARK_SCHEME = ("BEGIN MARK SCHEME", "END MARK SCHEME")
_ATTACHMENT = re.compile(r"!\[.*\]\(attachment:.+?\)")


# nbgrader.utils' predicates, with their exact values (they enter the checksum as str())
def _nbgrader(cell) -> dict | None:
    return cell.metadata.get("nbgrader")


def is_grade(cell):
    meta = _nbgrader(cell)
    return False if meta is None else meta.get("grade", False)


def is_solution(cell):
    meta = _nbgrader(cell)
    return False if meta is None else meta.get("solution", False)


def is_task(cell):
    meta = _nbgrader(cell)
    return False if meta is None else meta.get("task", False)


def is_locked(cell):
    meta = _nbgrader(cell)
    if meta is None or is_solution(cell):
        return False
    return True if is_grade(cell) else meta.get("locked", False)


def checksum(cell) -> str:
    """nbgrader's ``compute_checksum``: what a grader compares to see that a cell is unchanged."""
    m = hashlib.md5()
    for part in (cell.source, cell.cell_type, str(is_grade(cell)), str(is_solution(cell))):
        m.update(part.encode("utf-8"))
    m.update(str(is_locked(cell)).encode("utf-8"))
    m.update(cell.metadata.nbgrader["grade_id"].encode("utf-8"))
    if is_grade(cell):
        m.update(str(float(cell.metadata.nbgrader["points"])).encode("utf-8"))
    return m.hexdigest()


def remove_region(cell, delimiters, stub: list[str] | None, what: str) -> bool:
    """Remove the regions between ``delimiters`` from the cell's source (put ``stub``, indented
    as the first delimiter, in their place); whether there was one."""
    begin, end = delimiters
    lines, inside, found = [], False, False
    for line in cell.source.split("\n"):
        if begin in line:
            if inside:
                raise RuntimeError(f"encountered nested {begin} statements")
            inside = found = True
            indent = re.match(r"\s*", line).group(0)
            lines += [indent + s for s in stub or ()]
        elif end in line:
            inside = False
        elif what == "mark scheme" and inside and _ATTACHMENT.search(line):
            raise RuntimeError("an attachment in a mark scheme would leak into the student copy")
        elif not inside:
            lines.append(line)
    if inside:
        raise RuntimeError(f"no {end} statement found")
    cell.source = "\n".join(lines)
    return found


_MARKER = re.compile(r"^[ \t]*#[ \t]*NBVAL_[A-Z_]+[ \t]*(\n|$)", re.M)


def without_markers(source: str) -> str:
    """``source`` without the lines that only tell nbval what to compare (``# NBVAL_CHECK_OUTPUT``,
    ``# NBVAL_IGNORE_OUTPUT``, ...): what the site and the slides show of a code cell."""
    return _MARKER.sub("", source)


def _lock(cell) -> None:
    if is_solution(cell):
        cell.metadata["deletable"] = False
    elif is_grade(cell) or is_locked(cell):
        cell.metadata["deletable"] = False
        cell.metadata["editable"] = False


def clear_solution(cell) -> None:
    stub = CODE_STUB if cell.cell_type == "code" else TEXT_STUB
    replaced = remove_region(cell, SOLUTION, stub.split("\n"), "solution")
    if replaced and not is_solution(cell):
        raise RuntimeError("a solution region in a cell that is not a solution cell")
    if is_solution(cell) and not replaced:
        cell.source = stub


def clear_hidden(cell) -> None:
    """Remove the hidden tests and the mark scheme from ``cell``."""
    if remove_region(cell, HIDDEN_TESTS, None, "hidden tests") and not is_grade(cell):
        raise RuntimeError("a hidden test region in a cell that is not a graded cell")
    if remove_region(cell, MARK_SCHEME, None, "mark scheme") and not is_task(cell):
        raise RuntimeError("a mark scheme region in a cell that is not a task cell")


def _checksums(cells) -> None:
    for cell in cells:
        if is_grade(cell) or is_solution(cell) or is_locked(cell):
            cell.metadata.nbgrader["checksum"] = checksum(cell)
            cell.metadata.nbgrader["cell_type"] = cell.cell_type


def student_notebook(nb):
    """The student version of the instructor notebook ``nb`` (a new notebook; ``nb`` is left as it
    is): solutions replaced by the stub, hidden tests and mark schemes removed, outputs cleared,
    graded and locked cells locked, checksums computed."""
    nb = copy.deepcopy(nb)
    language = nb.metadata.get("kernelspec", {}).get("language", "python")
    if language != "python":
        raise RuntimeError(f"a {language} notebook: the course's student copies are Python")
    for cell in nb.cells:
        _lock(cell)
        clear_solution(cell)
    for cell in nb.cells:  # nbconvert's ClearOutputPreprocessor
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            for name in ("collapsed", "scrolled"):
                cell.metadata.pop(name, None)
    _checksums(nb.cells)
    for cell in nb.cells:
        clear_hidden(cell)
    _checksums(nb.cells)
    nb.metadata.pop("celltoolbar", None)
    return nb


def student_bytes(path: Path) -> bytes:
    """The student copy of the instructor notebook at ``path``, as the file nbgrader writes."""
    nb = read_notebook(path)
    check_source(path, nb)
    try:
        student = student_notebook(nb)
    except RuntimeError as e:
        raise UsageError(f"{path}: cannot make a student version of it: {e}") from None
    text = nbformat.writes(student, version=4)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")
