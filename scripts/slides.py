"""Give every cell of a chapter notebook its slide type (``slideshow.slide_type``), by one rule.

    python scripts/slides.py                      # every notebooks/NN_*.ipynb
    python scripts/slides.py notebooks/01_attention_as_selection.ipynb ...
    python scripts/slides.py --check              # exit 1 if a notebook is not as the rule says

``attncourse present NN`` shows a chapter as reveal.js slides (Voilà's reveal template): a
"slide" starts a new column, a "subslide" a slide below it in the same column, "-" continues the
slide above, "skip" is never shown (it still runs). → and ← move between the columns (the
chapter's sections and widgets), ↓ into a column (its figures, reproductions and claim checks),
and Space through everything in order. The rule, from the notebook's structure alone:

- the first markdown cell (title, outcomes, prerequisites) is the title slide;
- a markdown cell with a ``## `` heading starts a slide, one with a ``### `` heading (and no
  ``## ``) a subslide; so does a claim check (a markdown cell opening with ``**Claim check``), the
  summary's questions (one opening with ``**Check yourself``) and a long derivation (a markdown
  cell of more than LONG_MARKDOWN lines without a heading);
- a code cell that shows a widget (its result is a widget view) is a slide of its own, right after
  its section's explanation; one that shows a figure is a subslide of its own;
- skipped: the appendix (everything from the ``## Appendix`` heading on: the site shows it, a
  lecture does not), the graded exercises (each from its ``### Exercise`` header to its graded
  check cell, every cell of a ``## … Exercises (graded)`` section, and every nbgrader cell
  anywhere), the setup cells before the first ``## `` section (imports and seeds), code cells
  that show nothing, and code cells right after a widget (the live widget is on its slide);
- markdown right after a widget starts a subslide below it;
- every other cell continues the slide above ("-").

The script writes the metadata into the .ipynb (nothing else changes: no re-execution) and
rewrites its jupytext .py twin from it, so ``jupytext --to py:percent -o - X.ipynb | diff - X.py``
stays empty; it refuses a pair that was not in sync before. Running it again changes nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
LONG_MARKDOWN = 30  # lines: a longer markdown cell without a heading is a derivation of its own
SLIDE_TYPES = ("slide", "subslide", "fragment", "-", "skip", "notes")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

_SECTION = re.compile(r"^## ", re.M)
_SUBSECTION = re.compile(r"^### ", re.M)
_HEADING = re.compile(r"^#{1,3} ", re.M)
_EXERCISES = re.compile(r"^## .*\bExercises \(graded\)", re.M)
_EXERCISE = re.compile(r"^### Exercise\b", re.M)
_APPENDIX = re.compile(r"^## Appendix\b", re.M)
_WIDGET_REPR = re.compile(r"^[A-Za-z_]\w*\(children=")  # VBox(children=...), not a tqdm bar


def is_nbgrader(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader"))


def shows_widget(cell) -> bool:
    """The cell's result is a widget (not a progress bar that training displays on the way)."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if WIDGET_VIEW not in data:
            continue
        text = data.get("text/plain", "")
        text = "".join(text) if isinstance(text, list) else text
        if output.get("output_type") == "execute_result" or _WIDGET_REPR.match(text):
            return True
    return False


def shows_figure(cell) -> bool:
    return any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def slide_types(nb) -> list[str]:
    """The slide type of every cell of ``nb``, by the rule of this module's docstring."""
    types = []
    first_markdown = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), None)
    in_sections = in_exercises = in_exercise = in_appendix = after_widget = False
    for index, cell in enumerate(nb.cells):
        markdown = cell.cell_type == "markdown"
        text = cell.source
        if markdown and _SECTION.search(text):
            in_sections = True
            in_exercises = bool(_EXERCISES.search(text))
            in_appendix = in_appendix or bool(_APPENDIX.search(text))
        if markdown and _HEADING.search(text):
            after_widget = False
        if markdown and _EXERCISE.search(text):
            in_exercise = True  # until its graded check cell
        if markdown and after_widget and not _HEADING.search(text):
            after_widget = False  # the widget's slide ends: what follows gets a slide below it
            kind = "skip" if in_exercise or in_appendix else "subslide"
        elif is_nbgrader(cell) or in_exercises or in_exercise or in_appendix or after_widget:
            kind = "skip"
        elif index == first_markdown:
            kind = "slide"
        elif markdown:
            if _SECTION.search(text):
                kind = "slide"
            elif (
                _SUBSECTION.search(text)
                or text.lstrip().startswith(("**Claim check", "**Check yourself"))
                or len(text.splitlines()) > LONG_MARKDOWN
            ):
                kind = "subslide"
            else:
                kind = "-"
        elif cell.cell_type != "code" or not in_sections or not cell.get("outputs"):
            kind = "skip"
        elif shows_widget(cell):
            kind, after_widget = "slide", True
        elif shows_figure(cell):
            kind = "subslide"
        else:
            kind = "-"
        types.append(kind)
        if is_nbgrader(cell) and cell.metadata["nbgrader"].get("grade"):
            in_exercise = False
    return types


def stored_types(nb) -> list[str | None]:
    return [c.get("metadata", {}).get("slideshow", {}).get("slide_type") for c in nb.cells]


def apply(path: Path, check: bool = False) -> bool:
    """Write the rule's slide types into ``path`` and its .py twin; True if anything changed (with
    ``check``: True if anything would change, and nothing is written).
    """
    twin = path.with_suffix(".py")
    nb = nbformat.read(path, as_version=4)
    wanted = slide_types(nb)
    if stored_types(nb) == wanted:
        return False
    if check:
        return True
    before = jupytext.writes(nb, fmt="py:percent")
    if not twin.is_file() or twin.read_text() != before:
        raise SystemExit(
            f"{path.name} and {twin.name} are not in sync: update one from the other first "
            "(README, 'Writing a chapter')"
        )
    for cell, kind in zip(nb.cells, wanted):
        cell.metadata.setdefault("slideshow", {})["slide_type"] = kind
    nbformat.write(nb, path)
    # the twin of the notebook as stored, whose metadata keys are sorted (a cell's tags before the
    # slide type added here), as jupytext writes it from the file
    twin.write_text(jupytext.writes(nbformat.read(path, as_version=4), fmt="py:percent"))
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/NN_*.ipynb")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a notebook would change"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob(NOTEBOOK_GLOB))
    changed = [p for p in paths if apply(p, check=args.check)]
    for p in changed:
        print(f"{p.name}: {'slide types differ from the rule' if args.check else 'updated'}")
    if not changed:
        print(f"{len(paths)} notebooks: slide types as the rule says")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
