"""What the classroom tests share: the command run in-process, paths and notebook helpers.

(A module of its own, not conftest.py: two test folders each have a conftest, and
``from conftest import`` would find whichever was imported first.)
"""

import contextlib
import io
from pathlib import Path

import nbformat

from attncourse.classroom.cli import main

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
FIXTURES = ROOT / "tests" / "classroom" / "fixtures" / "notebooks"
FIXTURE = FIXTURES / "99_pipeline_fixture.ipynb"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
ALL = CHAPTERS + [FIXTURE]


def cli(*args):
    """Run the attncourse command in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in args])
        except SystemExit as e:  # argparse
            status = e.code
    return status, out.getvalue(), err.getvalue()


def read(path):
    return nbformat.read(path, as_version=4)


def meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def has_graded_cells(path):
    return any(meta(c).get("grade") for c in read(path).cells)
