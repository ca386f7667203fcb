"""The course as a package: a wheel built from a clean copy of the project starts the course in an
empty folder, with no clone beside it (the notebooks and weights travel in the wheel)."""

import os
import re
import zipfile
from pathlib import Path

import nbformat
import pytest
from classroom_helpers import CHAPTERS, ROOT, install_wheel, run


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A fresh virtual environment outside the repository with the wheel installed
    (``install_wheel``): (its bin folder, an empty working folder)."""
    python, _ = install_wheel(wheel, tmp_path_factory.mktemp("venv"))
    return python.parent, tmp_path_factory.mktemp("empty")


def test_the_wheel_holds_every_module_and_weights_file_of_the_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "attncourse"
    expected = {p.relative_to(ROOT).as_posix() for p in package.rglob("*.py")}
    expected |= {p.relative_to(ROOT).as_posix() for p in (package / "weights").glob("*.pt")}
    assert any(name.startswith("attncourse/attention/") for name in expected)  # subpackages too
    assert expected - names == set(), f"missing from the wheel: {sorted(expected - names)}"


def test_the_wheel_ships_every_chapter_notebook_the_weights_and_the_slides_style(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted(n for n in names if n.startswith("attncourse/notebooks/")) == [
        f"attncourse/notebooks/{c.name}" for c in CHAPTERS
    ]
    assert "attncourse/weights/ch02_seq2seq.pt" in names
    assert "attncourse/constraints.txt" in names  # chapter 00's environment check reads it
    slides = "attncourse/classroom/slides/"  # attncourse present's offline settings and styles
    static = slides + "voila/templates/attncourse-reveal/static/"
    for name in ("dist/reveal.css", "dist/theme/white.css", "dist/theme/attncourse.css"):
        assert static + name in names, f"{static + name} is not in the wheel"
    assert slides + "voila.json" in names
    lab = "attncourse/classroom/lab/"  # attncourse start's JupyterLab settings
    for name in (
        "course/jupyter_server_config.json",
        "course/labconfig/page_config.json",
        "course/settings/overrides.json",
        "learner/jupyter_server_config.json",
        "learner/labconfig/page_config.json",
    ):
        assert lab + name in names, f"{lab + name} is not in the wheel"


def _in_empty_folder(installed, *command):
    bin_dir, folder = installed
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return run([bin_dir / "attncourse", *command], folder, env=env), folder


def test_the_installed_package_is_the_wheel_not_the_clone(installed):
    bin_dir, folder = installed
    where = run([bin_dir / "python", "-c", "import attncourse; print(attncourse.__file__)"], folder)
    assert Path(where.stdout.strip()).is_relative_to(bin_dir.parent)
    load = "from attncourse.chapters.ch02_seq2seq_bottleneck import load_chapter_models as f; f()"
    run([bin_dir / "python", "-c", load], folder)


def test_release_in_an_empty_folder_writes_student_copies_of_every_chapter(installed):
    _, folder = _in_empty_folder(installed, "release", "--out", "student")
    written = sorted(p.name for p in (folder / "student").glob("*.ipynb"))
    assert written == [c.name for c in CHAPTERS]
    for path in (folder / "student").glob("*.ipynb"):
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        assert "### BEGIN SOLUTION" not in text and "### BEGIN HIDDEN TESTS" not in text


def test_start_in_an_empty_folder_makes_the_workspace_and_runs_jupyterlab(installed):
    result, folder = _in_empty_folder(installed, "start", "--dry-run")
    workspace = folder / "workspace"
    assert not workspace.exists(), "a dry run wrote the workspace"
    assert f"serve jupyterlab --ServerApp.root_dir={workspace.resolve()}" in result.stdout
    # JupyterLab's --version: the workspace is made, then JupyterLab runs, prints and exits
    result, _ = _in_empty_folder(installed, "start", "--version")
    assert sorted(p.name for p in workspace.glob("*.ipynb")) == [c.name for c in CHAPTERS]
    assert re.search(r"^\d+\.\d+\.\d+$", result.stdout, re.M), result.stdout
