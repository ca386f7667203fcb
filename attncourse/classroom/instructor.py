"""``attncourse course``: an instructor's nbgrader course directory for a class on JupyterHub.

It holds what nbgrader's own commands need, run from inside it (in a terminal of the
instructor's server, or ``runuser``): ``nbgrader_config.py`` (this folder as
``CourseDirectory.root``, the course id, and nbgrader's exchange, the folder every user can
write that ``release_assignment``, ``fetch``, ``submit`` and ``collect`` go through) and
``source/chNN/NN_name.ipynb``, one assignment per chapter, from the instructor notebooks. Then::

    nbgrader generate_assignment ch01 && nbgrader release_assignment ch01   # students fetch
    nbgrader collect ch01                                                   # after they submit
    attncourse grade submitted/*/ch01/*.ipynb --csv grades.csv              # the course's grader

A file already there is kept when it differs from what would be written (an instructor's own
edit), unless ``force`` (the old file is then backed up under ``.attncourse-backup/``).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from .notebooks import DEFAULT_SOURCE, UsageError, check_source, find_notebooks, read_notebook
from .release import BACKUPS, _backup, _write

DEFAULT_COURSE_ID = "attention"
DEFAULT_EXCHANGE = Path("/srv/nbgrader/exchange")  # nbgrader's own default
_COURSE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def assignment_id(notebook: Path) -> str:
    """``ch01`` for ``01_attention_as_selection.ipynb``."""
    return f"ch{notebook.name[:2]}"


def nbgrader_config(root: Path, course_id: str, exchange: Path) -> str:
    return (
        "# nbgrader's settings for this course directory (made by attncourse course)\n"
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.course_id = {course_id!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
    )


def _exchange_problem(exchange: Path) -> str | None:
    """Why nbgrader could not use ``exchange`` at all, or None."""
    if not exchange.is_absolute():
        return f"--exchange {exchange}: give an absolute path (every user's server reads it)"
    if not exchange.is_dir():
        return (
            f"nbgrader's exchange {exchange} does not exist: as root, make it writable by every "
            f"user: mkdir -p {exchange} && chmod 0777 {exchange}"
        )
    if not os.access(exchange, os.W_OK | os.X_OK):
        return f"nbgrader's exchange {exchange}: you cannot write to it, so nothing can be released"
    return None


def _exchange_warning(exchange: Path) -> str | None:
    """Why students might not reach ``exchange``, or None."""
    mode = exchange.stat().st_mode & 0o7777
    if mode & 0o777 == 0o777:
        return None
    return (
        f"warning: nbgrader's exchange {exchange} is not writable by every user (mode {mode:o}): "
        "where each student is a user of their own (a hub on one machine), they cannot fetch "
        f"or submit; as root: chmod 0777 {exchange} (where every server runs as one user, as on "
        "Kubernetes, it does not matter)"
    )


def make_course(
    root: Path,
    notebooks=(),
    *,
    course_id: str = DEFAULT_COURSE_ID,
    exchange: Path = DEFAULT_EXCHANGE,
    source: Path = DEFAULT_SOURCE,
    force: bool = False,
    echo=print,
) -> dict[str, str]:
    """Write (or bring up to date) the course directory ``root``; {path: what was done}."""
    if not _COURSE_ID.fullmatch(course_id):
        raise UsageError(
            f"--course-id {course_id!r}: use letters, digits, '_', '-' and '.' "
            "(nbgrader names folders of the exchange after it)"
        )
    problem = _exchange_problem(Path(exchange))
    if problem:
        raise UsageError(problem)
    warning = _exchange_warning(Path(exchange))
    if warning:
        print(f"attncourse course: {warning}", file=sys.stderr)
    notebooks = find_notebooks(notebooks, source)
    for notebook in notebooks:
        if not re.fullmatch(r"\d\d_.+\.ipynb", notebook.name):
            raise UsageError(f"{notebook}: not a chapter notebook (NN_name.ipynb)")
        check_source(notebook, read_notebook(notebook))
    root = Path(root).absolute()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a folder")
    planned = {root / "nbgrader_config.py": nbgrader_config(root, course_id, exchange).encode()}
    for notebook in notebooks:
        target = root / "source" / assignment_id(notebook) / notebook.name
        planned[target] = notebook.read_bytes()
    done = {}  # path -> (what was done, why)
    for target, data in planned.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            _write(target, data)
            done[target] = ("wrote", "")
        elif target.read_bytes() == data:
            done[target] = ("up to date", "")
        elif force:
            backup = _backup(target, root / BACKUPS)
            _write(target, data)
            done[target] = ("overwrote", f" (--force; the old file is saved as {backup})")
        else:
            done[target] = (
                "kept",
                ": it differs from the course's (your edit?); --force replaces it",
            )
    for target, (what, why) in done.items():
        echo(f"{what:<10} {target}{why}")
    first = assignment_id(notebooks[0])
    echo(
        f"\nCourse {course_id!r} in {root}, exchange {exchange}. Release a chapter from this "
        f"folder:\n  cd {root}\n  nbgrader generate_assignment {first} && "
        f"nbgrader release_assignment {first}\nand once students have submitted:\n"
        f"  nbgrader collect {first}\n"
        f"  attncourse grade submitted/*/{first}/*.ipynb --csv grades.csv --feedback feedback"
    )
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        echo(
            "(made as root: the files belong to root; chown -R the folder to the instructor, or "
            "run this command as the instructor)"
        )
    return {str(target): what for target, (what, _) in done.items()}
