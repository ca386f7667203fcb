"""A throw-away nbgrader course directory (``source/``, ``release/`` and an SQLite gradebook), one
assignment per notebook, named after the notebook: ``release`` (and ``grade``, to know what was
released) run nbgrader's ``generate_assignment`` in one, so a student copy is exactly what an
nbgrader course would hand out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import warnings
from pathlib import Path

from .notebooks import UsageError

DEFAULT_TIMEOUT = 60  # seconds a graded cell or call may take

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


class Course:
    """A throw-away nbgrader course directory with one assignment per notebook."""

    def __init__(self, root: Path):
        from nbgrader.apps.api import NbGraderAPI
        from traitlets.config import Config

        _prepare_environment()
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        config = Config()
        config.CourseDirectory.root = str(self.root)
        config.Exchange.root = str(self.root / "exchange")  # not /srv/nbgrader/exchange
        with _quiet():
            self.api = NbGraderAPI(config=config)
            _create_gradebook(self.root / "gradebook.db", self.api.coursedir.db_url)

    def assignment(self, notebook: Path) -> str:
        return notebook.stem

    def add_source(self, notebook: Path) -> Path:
        """Put an instructor notebook into ``source/<name>/``."""
        dest = self.root / "source" / self.assignment(notebook) / notebook.name
        dest.parent.mkdir(parents=True, exist_ok=True)
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
