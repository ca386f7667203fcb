"""How long a chapter takes a learner, by one rule: the time every chapter's opening states.

    python scripts/reading_time.py                 # every notebooks/NN_*.ipynb
    python scripts/reading_time.py notebooks/01_attention_as_selection.ipynb
    python scripts/reading_time.py --check         # exit 1 if a stated time is off by > 10 %

The rule, calibrated on readers with a machine-learning background working through a chapter
(not skimming it):

- **prose** at 150 words a minute: the words of the markdown cells (technical prose with
  equations; a word is a run of characters without spaces that holds a letter or a digit, so a
  table's bars and a formula's operators are not words);
- **code** at 20 lines a minute: the non-blank lines of the code cells as a learner's copy shows
  them: the test markers (``# NBVAL_…``), the hidden tests and the reference solutions are not
  there (a solution's place is the exercise's own time);
- **exercises** at the minutes each one states in its header line
  (``**Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** …``).

The **main path** is everything before the first ``## Appendix`` heading; the **appendix** is
the rest. A chapter's opening states both times (``main path about 85 min``, ``appendix about 40
min``), rounded to 5 minutes from 25 minutes up and to the minute below; a test fails when a
stated time and this script's differ by more than 10 %.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"

WORDS_PER_MINUTE = 150
CODE_LINES_PER_MINUTE = 20
TOLERANCE = 0.10  # a stated time may differ from the computed one by this fraction

APPENDIX = re.compile(r"^## Appendix\b", re.M)
SECTION = re.compile(r"^## (.+)$", re.M)
EXERCISE = re.compile(r"^### Exercise\b[^\n]*", re.M)
EXERCISE_MINUTES = re.compile(r"\*\*Time\*\*\s*(\d+)\s*min")
EXERCISE_POINTS = re.compile(r"\*\*Points\*\*\s*(\d+)")
WORD = re.compile(r"\S*[^\W_]\S*")  # a run without spaces holding a letter or a digit
STATED_MAIN = re.compile(r"main path about (\d+) min")
STATED_APPENDIX = re.compile(r"appendix about (\d+) min")
HIDDEN_TESTS = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
SOLUTION = re.compile(r"### BEGIN SOLUTION.*?### END SOLUTION\n?", re.S)
MARKER = re.compile(r"^\s*# NBVAL_\w+\s*$")
HTML_TAG = re.compile(r"<[^>]+>")


@dataclass
class Exercise:
    """An exercise's header as the learner reads it, and where it stands in its part."""

    title: str
    section: str  # the ``## `` section it sits in
    minutes: int
    points: int | None
    position: float  # the share of its part's reading time (prose + code) that comes before it


@dataclass
class Part:
    """The main path or the appendix of a chapter."""

    words: int = 0
    code_lines: int = 0
    exercises: list[Exercise] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)

    @property
    def reading_minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_lines / CODE_LINES_PER_MINUTE

    @property
    def exercise_minutes(self) -> int:
        return sum(e.minutes for e in self.exercises)

    @property
    def minutes(self) -> float:
        return self.reading_minutes + self.exercise_minutes


@dataclass
class Chapter:
    path: Path
    main: Part
    appendix: Part | None  # None when the chapter has no appendix
    stated_main: int | None
    stated_appendix: int | None


def prose_words(markdown: str) -> int:
    """The words of a markdown cell (HTML tags such as ``<details>`` are not words)."""
    return len(WORD.findall(HTML_TAG.sub(" ", markdown)))


def code_lines(source: str) -> int:
    """The lines of a code cell that a learner's copy shows and a learner reads."""
    source = SOLUTION.sub("", HIDDEN_TESTS.sub("", source))
    return sum(1 for line in source.splitlines() if line.strip() and not MARKER.match(line))


def rounded(minutes: float) -> int:
    """How a chapter states a time: to 5 minutes from 25 minutes up, else to the minute."""
    return 5 * round(minutes / 5) if minutes >= 25 else max(1, round(minutes))


def measure(path: Path) -> Chapter:
    """The words, code lines and exercises of ``path``'s main path and appendix."""
    nb = nbformat.read(path, as_version=4)
    parts = [Part()]
    headers = []  # (part index, exercise header text, section, reading minutes before it)
    section, opening = "", None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if APPENDIX.search(cell.source) and len(parts) == 1:
                parts.append(Part())
            if opening is None:
                opening = cell.source
            headings = SECTION.findall(cell.source)
            if headings:
                section = headings[-1].strip()
                parts[-1].sections += [h.strip() for h in headings]
            if EXERCISE.search(cell.source):
                headers.append((len(parts) - 1, cell.source, section, parts[-1].reading_minutes))
            parts[-1].words += prose_words(cell.source)
        elif cell.cell_type == "code":
            parts[-1].code_lines += code_lines(cell.source)
    for index, text, where, before in headers:
        part = parts[index]
        minutes = EXERCISE_MINUTES.search(text)
        points = EXERCISE_POINTS.search(text)
        part.exercises.append(
            Exercise(
                title=EXERCISE.search(text).group(0).lstrip("# ").strip(),
                section=where,
                minutes=int(minutes.group(1)) if minutes else 0,
                points=int(points.group(1)) if points else None,
                position=before / part.reading_minutes if part.reading_minutes else 0.0,
            )
        )
    opening = opening or ""
    main_stated, appendix_stated = STATED_MAIN.search(opening), STATED_APPENDIX.search(opening)
    return Chapter(
        path=path,
        main=parts[0],
        appendix=parts[1] if len(parts) > 1 else None,
        stated_main=int(main_stated.group(1)) if main_stated else None,
        stated_appendix=int(appendix_stated.group(1)) if appendix_stated else None,
    )


def off_by(stated: int | None, computed: float) -> str | None:
    """Why ``stated`` is not an honest statement of ``computed`` minutes, or None."""
    if stated is None:
        return "not stated"
    if abs(stated - computed) > TOLERANCE * computed:
        return f"states {stated} min, the rule gives {computed:.0f} (state {rounded(computed)})"
    return None


def problems(chapter: Chapter) -> list[str]:
    """What is wrong with the times ``chapter`` states."""
    found = []
    problem = off_by(chapter.stated_main, chapter.main.minutes)
    if problem:
        found.append(f"main path: {problem}")
    if chapter.appendix is not None:
        problem = off_by(chapter.stated_appendix, chapter.appendix.minutes)
        if problem:
            found.append(f"appendix: {problem}")
    elif chapter.stated_appendix is not None:
        found.append("states an appendix time but has no ## Appendix")
    return found


def statement(chapter: Chapter) -> str:
    """The time line a chapter's opening should carry."""
    line = f"main path about {rounded(chapter.main.minutes)} min"
    if chapter.appendix is not None:
        line += f", appendix about {rounded(chapter.appendix.minutes)} min"
    return line


def table(chapters: list[Chapter]) -> str:
    rows = [
        "| chapter | main words | main code lines | main exercises (min) | main min | "
        "appendix words | appendix min | stated |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in chapters:
        a = c.appendix
        rows.append(
            f"| {c.path.stem} | {c.main.words} | {c.main.code_lines} | "
            f"{len(c.main.exercises)} ({c.main.exercise_minutes}) | {c.main.minutes:.0f} | "
            f"{a.words if a else '—'} | {f'{a.minutes:.0f}' if a else '—'} | "
            f"{c.stated_main or '—'} / {c.stated_appendix or '—'} |"
        )
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/NN_*.ipynb")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a stated time is off by more than 10 %%"
    )
    args = parser.parse_args(argv)
    chapters = [measure(p) for p in args.notebooks or sorted(NOTEBOOKS.glob(NOTEBOOK_GLOB))]
    print(table(chapters))
    failed = False
    for chapter in chapters:
        found = problems(chapter)
        if found:
            failed = True
            print(f"{chapter.path.name}: {'; '.join(found)} — state: {statement(chapter)}")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
