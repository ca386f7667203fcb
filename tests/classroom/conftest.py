"""Fixtures of the classroom tests: the releases of every chapter and of the fixture notebook, and
the wheel."""

import shutil

import pytest
from classroom_helpers import CHAPTERS, FIXTURE, FIXTURES, build_wheel, cli

# The fixture notebooks are inputs of the release and grading tests, not chapters: nbval skips them.
collect_ignore = ["fixtures"]


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


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """attncourse-<version>.whl built from the project's files alone (what git would commit)."""
    if shutil.which("git") is None:
        pytest.skip("needs git to copy the project")
    return build_wheel(tmp_path_factory.mktemp("wheel"))
