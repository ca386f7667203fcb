"""An HTML report per graded submission: each exercise (by its title in the notebook), its points
and what its check said.

The notes are the grader's (the visible check's message, or "passed the visible check but not the
hidden tests"), never a hidden test, its inputs or a traceback; everything is escaped and shown
without invisible characters. A report speaks its submission's language (``Graded.language``: a
Chinese edition's notebook gets a Chinese report, marked ``lang="zh-CN"``). The reports are laid
out as nbgrader lays out feedback, ``<folder>/<student>/<assignment>/<notebook>.html``, each part
written reversibly (``attncourse.classroom.output.path_part``), so no two students, assignments or
notebooks share a file; two reports whose paths differ only in letter case (or an odd file named
like another's report) get a suffix of their own, so they stay apart on a file system that ignores
case too. Each report names its student and assignment inside (``OWNER``): grading a student's
assignment again removes that student's earlier reports of it which the new grading does not
write again (a copy since deleted, a suffix no longer needed), and never a classmate's or a file
the course did not write.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path

from ..i18n import html_language, say, speaking
from .marking import Graded
from .output import clean, path_part, shown

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;"
    "padding:.4em;text-align:left;vertical-align:top}.full{color:#1a7f37}.lost{color:#b42318}"
)


# the report's own words, in the submission's language (``attncourse.i18n.say``)
ALL_PASSED = "✓ all checks passed"
POINTS = "{points} / {max_points} points"
EXERCISE = "exercise"
POINTS_COLUMN = "points"
WHAT_IT_SAID = "what the check said"
NOTES = "Notes"
SENTENCES = (ALL_PASSED, POINTS, EXERCISE, POINTS_COLUMN, WHAT_IT_SAID, NOTES)


def render(result: Graded) -> str:
    with speaking(result.language):
        return _render(result)


def _render(result: Graded) -> str:
    rows = []
    for e in result.exercises:
        status = "full" if e.points >= e.max_points else "lost"
        note = html.escape(clean(e.note, 1000)) if e.note else html.escape(say(ALL_PASSED))
        rows.append(
            f"<tr><td>{html.escape(clean(e.title or e.grade_id, 200))}</td><td class='{status}'>"
            f"{e.points:g} / {e.max_points:g}</td><td>{note}</td></tr>"
        )
    notes = "".join(f"<li>{html.escape(clean(n, 1000))}</li>" for n in result.notes)
    title = html.escape(f"{clean(result.notebook, 200)} — {shown(result.student)}")
    points = say(POINTS, points=f"{result.points:g}", max_points=f"{result.max_points:g}")
    headings = (EXERCISE, POINTS_COLUMN, WHAT_IT_SAID)
    columns = "".join(f"<th>{html.escape(say(c))}</th>" for c in headings)
    return (
        f"<!doctype html><html lang='{html.escape(html_language(result.language))}'><head>"
        f"<meta charset='utf-8'>{_owner_tag(result)}<title>{title}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>"
        f"<p><strong>{html.escape(points)}</strong></p>"
        f"<table><tr>{columns}</tr>"
        + "".join(rows)
        + "</table>"
        + (f"<h2>{html.escape(say(NOTES))}</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )


# <meta name='attncourse-report' content='["student", "assignment"]'>, in the report's <head>
OWNER = re.compile(r"<meta name='attncourse-report' content='([^']*)'>")


def _owner(result: Graded) -> list[str]:
    return [result.student, result.assignment or Path(result.notebook).stem]


def _owner_tag(result: Graded) -> str:
    owner = json.dumps(_owner(result), ensure_ascii=True)  # a student id may be any bytes
    return f"<meta name='attncourse-report' content='{html.escape(owner)}'>"


def _owner_of(path: Path) -> list[str] | None:
    """The [student, assignment] a report written here names; None for any other file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            found = OWNER.search(file.read(4096))
        return json.loads(html.unescape(found.group(1))) if found else None
    except (OSError, ValueError):
        return None


def _path(result: Graded) -> Path:
    name = result.notebook
    notebook = Path(name).stem if name.endswith(".ipynb") else f"{name}.file"
    assignment = result.assignment or Path(name).stem
    return Path(path_part(result.student), path_part(assignment), path_part(notebook) + ".html")


def write(results: list[Graded], folder: Path) -> list[Path]:
    """``folder/<student>/<assignment>/<notebook>.html`` for each result; the paths written."""
    paths = [Path(folder) / _path(result) for result in results]
    count: dict[str, int] = {}
    for path in paths:
        count[str(path).casefold()] = count.get(str(path).casefold(), 0) + 1
    targets = []
    for result, path in zip(results, paths):
        # "Bob" and "bob" in this batch, or an earlier report of another student in this file
        # (a file system that ignores case)
        taken = path.exists() and _owner_of(path) not in (None, _owner(result))
        if count[str(path).casefold()] > 1 or taken:
            key = "\0".join([result.student, result.assignment, result.submission])
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:10]
            path = path.with_name(f"{path.stem}~{digest}.html")
        targets.append(path)
    _remove_stale(results, targets)
    for result, path in zip(results, targets):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(result), encoding="utf-8")
    return targets


def _remove_stale(results: list[Graded], targets: list[Path]) -> None:
    """Remove the earlier reports of each (student, assignment) graded now that are not written
    again now: only files whose ``OWNER`` names that student and assignment."""
    keep = {str(path).casefold() for path in targets}
    graded = {(path.parent, tuple(_owner(result))) for result, path in zip(results, targets)}
    for folder, owner in graded:  # each folder read once per student and assignment
        if folder.is_dir():
            for old in folder.glob("*.html"):
                if str(old).casefold() not in keep and _owner_of(old) == list(owner):
                    old.unlink()
