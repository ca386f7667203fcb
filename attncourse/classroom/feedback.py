"""An HTML report per graded submission: each exercise's points and what its check said.

The notes are the grader's (the visible check's message, or "passed the visible check but not the
hidden tests"), never a hidden test, its inputs or a traceback; everything is escaped.
"""

from __future__ import annotations

import html
from pathlib import Path

from .marking import Graded, clean

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;"
    "padding:.4em;text-align:left;vertical-align:top}.full{color:#1a7f37}.lost{color:#b42318}"
)


def render(result: Graded) -> str:
    rows = []
    for e in result.exercises:
        status = "full" if e.points >= e.max_points else "lost"
        note = html.escape(clean(e.note, 1000)) if e.note else "✓ all checks passed"
        rows.append(
            f"<tr><td>{html.escape(e.grade_id)}</td><td class='{status}'>{e.points:g} / "
            f"{e.max_points:g}</td><td>{note}</td></tr>"
        )
    notes = "".join(f"<li>{html.escape(clean(n, 1000))}</li>" for n in result.notes)
    title = html.escape(f"{result.notebook} — {result.student}")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>"
        f"<p><strong>{result.points:g} / {result.max_points:g} points</strong></p>"
        "<table><tr><th>exercise</th><th>points</th><th>what the check said</th></tr>"
        + "".join(rows)
        + "</table>"
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )


def write(results: list[Graded], folder: Path) -> list[Path]:
    """``folder/<student>/<notebook>.html`` for each result; returns the paths written."""
    written = []
    for result in results:
        student = "".join(c if c.isalnum() or c in "-_." else "_" for c in result.student)
        path = (
            Path(folder) / (student.strip(".") or "student") / f"{Path(result.notebook).stem}.html"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(result), encoding="utf-8")
        written.append(path)
    return written
