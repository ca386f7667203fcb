"""A throw-away nbgrader course directory (``source/``, ``release/``, ``submitted/``,
``autograded/`` and an SQLite gradebook), one assignment per notebook, named after the notebook;
``release`` and ``grade`` run nbgrader itself in one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import nbformat

from .notebooks import UsageError

DEFAULT_TIMEOUT = 60
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

# ------------------------------------------------------------------------------- nbgrader


def _prepare_environment() -> None:
    """nbgrader runs ``alembic`` and starts kernels by name: use this interpreter's tools first."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + path


@contextlib.contextmanager
def _quiet():
    """nbgrader's own log is captured per call; silence its SQLAlchemy and deprecation warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = logging.root.level
        logging.root.setLevel(logging.ERROR)
        try:
            yield
        finally:
            logging.root.setLevel(previous)


class CellTimeouts:
    """Each cell's time limit: ``per_cell`` seconds, within a budget for the whole notebook.

    A kernel stopped by a timeout is interrupted and grading goes on; a kernel that ignores the
    interrupt (a long C call, a handler for SIGINT) stays busy, so each remaining cell would wait
    its full limit. Once the notebook's budget is spent, the remaining cells get 1 s each.
    """

    def __init__(self, per_cell: int, total: int):
        self.per_cell, self.total = per_cell, total
        self.deadline = None

    def start(self) -> None:
        self.deadline = time.monotonic() + self.total

    def __call__(self, cell=None) -> int:
        if self.deadline is None:
            return self.per_cell
        return max(1, min(self.per_cell, int(self.deadline - time.monotonic())))


def default_notebook_timeout(timeout: int) -> int:
    return max(600, 10 * timeout)


class Course:
    """A throw-away nbgrader course directory with one assignment per notebook."""

    def __init__(
        self, root: Path, timeout: int | None = DEFAULT_TIMEOUT, notebook_timeout: int | None = None
    ):
        from nbgrader.apps.api import NbGraderAPI
        from traitlets.config import Config

        _prepare_environment()
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        config = Config()
        config.CourseDirectory.root = str(self.root)
        config.Exchange.root = str(self.root / "exchange")  # not /srv/nbgrader/exchange
        self.cell_timeouts = None
        if timeout is not None:
            total = notebook_timeout or default_notebook_timeout(timeout)
            self.cell_timeouts = CellTimeouts(timeout, total)
            config.Execute.timeout_func = self.cell_timeouts
        config.Execute.timeout = timeout
        config.Execute.interrupt_on_timeout = True
        config.Execute.raise_on_iopub_timeout = False  # a kernel that ignores the interrupt: go on
        config.Execute.extra_arguments = [
            "--HistoryManager.hist_file=:memory:",
            "--IPKernelApp.log_level=ERROR",
        ]
        with _quiet():
            self.api = NbGraderAPI(config=config)
            _create_gradebook(self.root / "gradebook.db", self.api.coursedir.db_url)
        self.timeout = timeout

    def assignment(self, notebook: Path) -> str:
        return notebook.stem

    def add_source(self, notebook: Path, kernelspec: bool = False) -> Path:
        """Put an instructor notebook into ``source/<name>/``; ``kernelspec``: run it with this
        Python.
        """
        name = self.assignment(notebook)
        dest = self.root / "source" / name / notebook.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if kernelspec:
            nb = nbformat.read(notebook, as_version=4)
            nb.metadata["kernelspec"] = dict(KERNELSPEC)
            nbformat.write(nb, dest)
        else:
            shutil.copyfile(notebook, dest)
        return dest

    def generate(self, notebook: Path) -> Path:
        """``nbgrader generate_assignment``: the student version of a source notebook."""
        name = self.assignment(notebook)
        with _quiet():
            result = self.api.generate_assignment(name)
        released = self.root / "release" / name / notebook.name
        if not result.get("success") or not released.exists():
            raise UsageError(
                f"{notebook}: nbgrader cannot make a student version of it:\n"
                f"{nbgrader_error(result)}"
            )
        return released

    def submit(self, notebook_name: str, student: str, nb) -> Path:
        assignment = Path(notebook_name).stem
        dest = self.root / "submitted" / student / assignment / notebook_name
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, dest)
        return dest

    def autograde(self, notebook_name: str, student: str) -> dict:
        if self.cell_timeouts is not None:
            self.cell_timeouts.start()
        with _quiet():
            return self.api.autograde(Path(notebook_name).stem, student)

    def grades(self, notebook_name: str, student: str) -> dict[str, tuple[float, float, bool]]:
        from nbgrader.api import Gradebook

        name = Path(notebook_name).stem
        with _quiet(), Gradebook(self.api.coursedir.db_url) as gb:
            submitted = gb.find_submission_notebook(name, name, student)
            return {
                g.name: (float(g.score or 0.0), float(g.max_score), bool(g.needs_manual_grade))
                for g in submitted.grades
            }

    def autograded(self, notebook_name: str, student: str) -> Path:
        return self.root / "autograded" / student / Path(notebook_name).stem / notebook_name


def _gradebook_template() -> Path:
    import nbgrader

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attncourse"
    return cache / f"gradebook-nbgrader-{nbgrader.__version__}.db"


def _create_gradebook(path: Path, db_url: str) -> None:
    """Start from an empty gradebook that nbgrader made before, if there is one.

    A new gradebook asks ``alembic heads`` (a subprocess that imports nbgrader: seconds) for the
    schema version; it is the same for every gradebook of one nbgrader version, so the first
    empty gradebook is kept under ~/.cache/attncourse and copied after that.
    """
    from nbgrader.api import Gradebook

    template = _gradebook_template()
    if template.is_file():
        with contextlib.suppress(OSError):
            shutil.copyfile(template, path)
            return
    with Gradebook(db_url):
        pass
    with contextlib.suppress(OSError):
        template.parent.mkdir(parents=True, exist_ok=True)
        partial = template.with_name(f"{template.name}.{os.getpid()}.tmp")
        shutil.copyfile(path, partial)
        os.replace(partial, template)


def nbgrader_error(result: dict) -> str:
    log = result.get("log") or ""
    if "Kernel died" in log:
        return "the kernel died while running it (the notebook ended or crashed Python)"
    noise = (
        "see the the above traceback",
        "There was an error processing",
        "Traceback (most recent call last)",
    )
    lines = [
        line
        for line in log.splitlines()
        if line.startswith("[ERROR]") and not any(n in line for n in noise)
    ]
    if lines:
        return "\n".join(lines[-6:])
    error = (result.get("error") or "").strip().splitlines()
    return error[-1] if error else "(no message from nbgrader)"
