"""An HTML report per graded submission: each exercise's points and what its check said.

The notes are the grader's (the visible check's message, or "passed the visible check but not the
hidden tests"), never a hidden test, its inputs or a traceback; everything is escaped and shown
without invisible characters. A report speaks its submission's language (``Graded.language``: a
Chinese edition's notebook gets a Chinese report, marked ``lang="zh-CN"``). The reports are laid
out as nbgrader lays out feedback, ``<folder>/<student>/<assignment>/<notebook>.html``, each part
written reversibly (``attncourse.classroom.output.path_part``), so no two students, assignments or
notebooks share a file; two reports whose paths differ only in letter case (or an odd file named
like another's report) get a suffix of their own, so they stay apart on a file system that ignores
case too.
"""

from __future__ import annotations

import hashlib
import html
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
            f"<tr><td>{html.escape(clean(e.grade_id, 200))}</td><td class='{status}'>"
            f"{e.points:g} / {e.max_points:g}</td><td>{note}</td></tr>"
        )
    notes = "".join(f"<li>{html.escape(clean(n, 1000))}</li>" for n in result.notes)
    title = html.escape(f"{clean(result.notebook, 200)} — {shown(result.student)}")
    points = say(POINTS, points=f"{result.points:g}", max_points=f"{result.max_points:g}")
    headings = (EXERCISE, POINTS_COLUMN, WHAT_IT_SAID)
    columns = "".join(f"<th>{html.escape(say(c))}</th>" for c in headings)
    return (
        f"<!doctype html><html lang='{html.escape(html_language(result.language))}'><head>"
        f"<meta charset='utf-8'><title>{title}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>"
        f"<p><strong>{html.escape(points)}</strong></p>"
        f"<table><tr>{columns}</tr>"
        + "".join(rows)
        + "</table>"
        + (f"<h2>{html.escape(say(NOTES))}</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )


def _path(result: Graded) -> Path:
    name = result.notebook
    notebook = Path(name).stem if name.endswith(".ipynb") else f"{name}.file"
    assignment = result.assignment or Path(name).stem
    return Path(path_part(result.student), path_part(assignment), path_part(notebook) + ".html")


def write(results: list[Graded], folder: Path) -> list[Path]:
    """``folder/<student>/<assignment>/<notebook>.html`` for each result; the paths written."""
    paths = [_path(result) for result in results]
    count: dict[str, int] = {}
    for path in paths:
        count[str(path).casefold()] = count.get(str(path).casefold(), 0) + 1
    written = []
    for result, path in zip(results, paths):
        if count[str(path).casefold()] > 1:  # "Bob" and "bob" where case does not count
            key = "\0".join([result.student, result.assignment, result.submission])
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:10]
            path = path.with_name(f"{path.stem}~{digest}.html")
        path = Path(folder) / path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(result), encoding="utf-8")
        written.append(path)
    return written
