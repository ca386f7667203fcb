"""What the classroom tests share: the command run in-process, paths and notebook helpers.

(A module of its own, not conftest.py: two test folders each have a conftest, and
``from conftest import`` would find whichever was imported first.)
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from attncourse.classroom import sandbox
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


def run(command, cwd=None, **kwargs) -> subprocess.CompletedProcess:
    """Run ``command`` (its text captured); a failed test, with its output, if it fails."""
    result = subprocess.run(
        [str(c) for c in command], cwd=cwd, capture_output=True, text=True, **kwargs
    )
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result


def build_wheel(folder: Path) -> Path:
    """attncourse-<version>.whl built in ``folder`` from the project's files alone (what git
    would commit)."""
    copy, out = folder / "project", folder / "wheel"
    files = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT).stdout
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    run([*pip_wheel, "-q", "-w", out, "."], copy)
    (built,) = out.glob("attncourse-*.whl")
    return built


def install_wheel(wheel: Path, venv: Path) -> tuple[Path, Path]:
    """A fresh virtual environment at ``venv`` with ``wheel`` installed: (its python, its
    site-packages). Its dependencies are those of this environment, reached through a .pth file,
    so it needs no network. Readable by every user (the sandbox's too), as ``python -m venv``
    makes a new folder."""
    venv.mkdir(parents=True, exist_ok=True)
    venv.chmod(0o755)
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    where = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    purelib = Path(where.stdout.strip())
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel])
    return python, purelib


def read(path):
    return nbformat.read(path, as_version=4)


def meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def has_graded_cells(path):
    return any(meta(c).get("grade") for c in read(path).cells)


# the fixture's two exercises: a from-scratch softmax (2 points), a weighted average (1 point)
SOFTMAX = "stable_softmax"
AVERAGE = "weighted_average"
HONEST_AVERAGE = "def weighted_average(weights, values):\n    return weights @ values\n"
HONEST_SOFTMAX = (
    "def stable_softmax(scores):\n"
    "    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))\n"
    "    return e / e.sum(dim=-1, keepdim=True)\n"
)


def sandbox_or_skip():
    """Grading tests need the bubblewrap sandbox: skipped without one, except in CI (CI=true)."""
    try:
        sandbox.check_sandbox()
    except sandbox.SandboxUnavailable as error:
        if os.environ.get("CI") == "true":
            raise AssertionError(f"CI must grade in a sandbox: {error}") from None
        pytest.skip(f"no bubblewrap sandbox here ({error}); install the package bubblewrap")


def with_answers(release: Path, folder: Path, answers: dict, edit=None) -> Path:
    """A copy of the student copy ``release`` in ``folder`` with ``answers`` {grade id: source}
    put in, then ``edit(cells)``."""
    nb = json.loads(release.read_text())
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    if edit is not None:
        edit(nb["cells"])
    folder.mkdir(parents=True)
    path = folder / release.name
    path.write_text(json.dumps(nb) if isinstance(nb, dict) else nb)
    return path
