"""Which optional part of the install each command needs, and the message when it is missing.

A learner's install (``pip install attncourse``) is the course itself: ``start`` and the
chapters. Lecturing (``present``: Voilà), the static site (``site``: Sphinx) and grading
(``release``, ``grade``, ``progress``: nbgrader) each come with an extra of their own.
"""

from __future__ import annotations

import importlib.util

from .notebooks import UsageError

# extra -> the modules it brings that the commands import
EXTRAS = {
    "lecture": ("voila",),
    "site": ("sphinx", "myst_nb", "sphinx_book_theme"),
    "classroom": ("nbgrader",),
}
COMMANDS = {
    "present": "lecture",
    "site": "site",
    "release": "classroom",
    "grade": "classroom",
    "merge": "classroom",
    "progress": "classroom",
}
WHAT = {
    "lecture": "presents slides with Voilà",
    "site": "builds the site with Sphinx",
    "classroom": "grades with the course's grader, built on nbgrader",
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(extra: str) -> list[str]:
    return [m for m in EXTRAS[extra] if not _importable(m)]


def require(command: str) -> None:
    """Raise ``UsageError`` naming the extra to install if ``command`` needs one that is not
    installed."""
    extra = COMMANDS.get(command)
    if extra is None:
        return
    absent = missing(extra)
    if absent:
        raise UsageError(
            f"it {WHAT[extra]}, which this install lacks ({', '.join(absent)} not found). "
            f'Install the {extra} extra: pip install "attncourse[{extra}]" '
            f'(in a clone: pip install -e ".[{extra}]")'
        )
