"""What the classroom tests share: the command run in-process, notebook helpers, the releases."""

import contextlib
import io
from pathlib import Path

import nbformat
import pytest

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


@pytest.fixture(scope="session")
def released(tmp_path_factory):
    """name -> student copy, for every chapter notebook and the fixture."""
    chapters_out = tmp_path_factory.mktemp("release-chapters")
    fixture_out = tmp_path_factory.mktemp("release-fixture")
    if CHAPTERS:
        status, out, err = cli("release", "--out", chapters_out)
        assert status == 0, err
    status, out, err = cli("release", "--out", fixture_out, "--source", FIXTURES)
    assert status == 0, err
    copies = {p.name: chapters_out / p.name for p in CHAPTERS}
    copies[FIXTURE.name] = fixture_out / FIXTURE.name
    assert all(p.is_file() for p in copies.values())
    return copies
