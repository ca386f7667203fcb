"""``attncourse progress``: which exercises of a learner's workspace pass, checked as the grader
checks them (in a sandbox when bubblewrap is there; it is the learner's own code either way)."""

from __future__ import annotations

from pathlib import Path

from .grade import grade
from .marking import clean
from .notebooks import NOTEBOOK_GLOB, UsageError, graded_cells, read_notebook
from .sandbox import SandboxUnavailable, check_sandbox


def progress(workspace: Path, *, source: Path, echo=print) -> list:
    """Grade every chapter notebook of ``workspace`` that has exercises; print a summary."""
    workspace = Path(workspace)
    if not workspace.is_dir():
        raise UsageError(f"{workspace}: no workspace here (make it with `attncourse start`)")
    notebooks = [
        p
        for p in sorted(workspace.glob(NOTEBOOK_GLOB))
        if (Path(source) / p.name).is_file() and graded_cells(read_notebook(Path(source) / p.name))
    ]
    if not notebooks:
        raise UsageError(f"{workspace}: no chapter notebooks with exercises in it")
    try:
        check_sandbox()
        sandbox = True
    except SandboxUnavailable:
        sandbox = False  # your own code: no sandbox needed to check it
    results = grade(notebooks, source=source, sandbox=sandbox, progress=True, echo=lambda _: None)
    total = maximum = 0.0
    for result in results:
        passed = sum(1 for e in result.exercises if e.points >= e.max_points)
        echo(
            f"{result.notebook}: {passed} of {len(result.exercises)} exercises pass, "
            f"{result.points:g} / {result.max_points:g} points"
        )
        for e in result.exercises:
            mark = "✓" if e.points >= e.max_points else "✗"
            echo(f"  {mark} {e.grade_id}" + (f": {clean(e.note, 160)}" if e.note else ""))
        total, maximum = total + result.points, maximum + result.max_points
    echo(f"in all: {total:g} / {maximum:g} points")
    return results
