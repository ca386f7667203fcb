"""The course's notebooks as the classroom commands see them: where the instructor notebooks are,
reading them, and the authoring mistakes nbgrader reports only vaguely.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

_PACKAGED_NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"  # in the wheel
_REPOSITORY_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"  # pip install -e .
DEFAULT_SOURCE = next(
    (p for p in (_PACKAGED_NOTEBOOKS, _REPOSITORY_NOTEBOOKS) if p.is_dir()), Path("notebooks")
)
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"


class UsageError(Exception):
    """Bad input (a missing file, an unknown notebook, ...): the command exits with status 2."""


# ------------------------------------------------------------------------------- notebooks


def read_notebook(path: Path):
    import nbformat  # on first use: a learner's check imports this module for DEFAULT_SOURCE

    try:
        return nbformat.read(path, as_version=4)
    except Exception as e:
        raise UsageError(f"{path}: not a readable notebook ({type(e).__name__}: {e})") from None


def is_graded(cell) -> bool:
    """An nbgrader check cell (``grade``): a notebook's cell, or the cell dict nbval runs."""
    return bool((cell.get("metadata", {}).get("nbgrader") or {}).get("grade"))


def graded_cells(nb) -> list:
    return [c for c in nb.cells if is_graded(c)]


def check_source(path: Path, nb) -> None:
    """Authoring mistakes nbgrader reports only vaguely ("the nbgrader metadata may be
    corrupted").
    """
    seen = {}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if not meta:
            continue
        grade_id = meta.get("grade_id")
        if not grade_id:
            raise UsageError(f"{path}: cell {index + 1} has nbgrader metadata but no grade_id")
        if grade_id in seen:
            raise UsageError(
                f"{path}: cells {seen[grade_id] + 1} and {index + 1} "
                f"share the grade_id {grade_id!r}"
            )
        seen[grade_id] = index
        if meta.get("grade") and "points" not in meta:
            raise UsageError(f"{path}: graded cell {grade_id!r} has no points")


def chapters(source: Path) -> list[Path]:
    """Every ``NN_*.ipynb`` in ``source``, in chapter order."""
    return sorted(Path(source).glob(NOTEBOOK_GLOB))


def chapter_notebook(chapter: str, source: Path = DEFAULT_SOURCE) -> Path:
    """The notebook of ``chapter``: a number (``1``, ``01``) of a notebook in ``source``, or a
    notebook's path."""
    path = Path(chapter)
    found = chapters(source)
    if path.suffix == ".ipynb":
        if not path.is_file():
            close = difflib.get_close_matches(path.name, [p.name for p in found], n=1)
            raise UsageError(
                f"{path}: no such notebook" + (f" (did you mean {close[0]}?)" if close else "")
            )
        return path
    if path.is_file():
        raise UsageError(f"{path}: not a notebook (expected a .ipynb file)")
    names = "".join(f"\n  {p.stem}" for p in found) or f" none (no NN_name.ipynb in {source})"
    if not re.fullmatch(r"\d{1,2}", chapter):
        raise UsageError(f"{chapter!r} is not a chapter number (00-99). Chapters:{names}")
    matches = [p for p in found if p.name.startswith(f"{int(chapter):02d}_")]
    if not matches:
        raise UsageError(f"no chapter {int(chapter):02d} in {source}. Chapters:{names}")
    return matches[0]


def find_notebooks(paths, source: Path) -> list[Path]:
    """The notebooks named (a path, a chapter number or a notebook's name in ``source``, as
    ``chapter_notebook`` reads them), or every ``NN_*.ipynb`` in ``source``."""
    if paths:
        found = []
        for given in map(str, paths):
            p = Path(given)
            if p.suffix == ".ipynb" and not p.is_file() and (Path(source) / p.name).is_file():
                p = Path(source) / p.name  # a name, or the clone's path from elsewhere
            found.append(chapter_notebook(str(p), source))
        return found
    found = chapters(source)
    if not found:
        raise UsageError(f"no notebooks (NN_name.ipynb) in {source}")
    return found
