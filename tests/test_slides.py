"""Every chapter notebook has slide metadata, by the rule of scripts/slides.py: a title slide first,
each section a slide, each widget on a slide of its own, the graded exercises skipped. The slides
are what ``attncourse present NN`` shows.
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
FIX = "give it slides with: python scripts/slides.py notebooks/{name}"

_spec = importlib.util.spec_from_file_location("slides", ROOT / "scripts" / "slides.py")
slides = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(slides)


def read(path):
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_cell_has_the_slide_type_of_the_rule(path):
    nb = read(path)
    stored, wanted = slides.stored_types(nb), slides.slide_types(nb)
    assert stored != [None] * len(nb.cells), f"{path.name} has no slide metadata: " + FIX.format(
        name=path.name
    )
    differ = [
        f"cell {i + 1}: {s!r}, the rule says {w!r}"
        for i, (s, w) in enumerate(zip(stored, wanted))
        if s != w
    ]
    assert not differ, f"{path.name}: " + "; ".join(differ[:5]) + ". " + FIX.format(name=path.name)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_title_slide_first_exercises_skipped_widgets_on_their_own_slide(path):
    nb = read(path)
    types = slides.stored_types(nb)
    shown = [(c, t) for c, t in zip(nb.cells, types) if t != "skip"]
    assert shown, f"{path.name}: no slide is shown. " + FIX.format(name=path.name)
    first, first_type = shown[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), (
        f"{path.name}: the first slide is not the chapter's title cell"
    )
    assert first_type == "slide", f"{path.name}: the title cell is {first_type!r}, not a slide"
    in_exercises = in_appendix = False
    for i, (cell, kind) in enumerate(zip(nb.cells, types)):
        if cell.cell_type == "markdown" and slides._SECTION.search(cell.source):
            in_exercises = bool(slides._EXERCISES.search(cell.source))
            in_appendix = in_appendix or bool(slides._APPENDIX.search(cell.source))
        exercise_header = cell.cell_type == "markdown" and slides._EXERCISE.search(cell.source)
        if slides.is_nbgrader(cell) or in_exercises or exercise_header:
            assert kind == "skip", f"{path.name}: cell {i + 1} is an exercise, shown as {kind!r}"
        if in_appendix:
            assert kind == "skip", (
                f"{path.name}: cell {i + 1} is in the appendix, shown as {kind!r}"
            )
        if cell.cell_type == "code" and slides.shows_widget(cell):
            assert kind == "slide", f"{path.name}: cell {i + 1} shows a widget, shown as {kind!r}"
            after = next((t for t in types[i + 1 :] if t != "skip"), "slide")
            assert after in ("slide", "subslide"), (
                f"{path.name}: the cell after widget cell {i + 1} joins its slide ({after!r})"
            )
    assert any(slides.shows_widget(c) for c in nb.cells), f"{path.name}: no widget found"


def test_the_script_is_idempotent_and_keeps_the_pair_in_sync(tmp_path):
    source = ROOT / "notebooks" / "01_attention_as_selection.ipynb"
    nb = read(source)
    for cell in nb.cells:
        cell.metadata.pop("slideshow", None)
    copy = tmp_path / source.name
    nbformat.write(nb, copy)
    import jupytext

    copy.with_suffix(".py").write_text(jupytext.writes(nb, fmt="py:percent"))
    assert slides.main(["--check", str(copy)]) == 1
    assert slides.apply(copy) is True
    assert slides.apply(copy) is False, "a second run changed the notebook again"
    assert slides.main(["--check", str(copy)]) == 0
    text = subprocess.run(
        [sys.executable, "-m", "jupytext", "--to", "py:percent", "-o", "-", str(copy)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert text == copy.with_suffix(".py").read_text()
    outputs = [c.get("outputs") for c in read(copy).cells]
    assert outputs == [c.get("outputs") for c in nb.cells], "the script changed outputs"


def test_the_script_refuses_a_pair_out_of_sync(tmp_path):
    source = ROOT / "notebooks" / "01_attention_as_selection.ipynb"
    nb = read(source)
    for cell in nb.cells:
        cell.metadata.pop("slideshow", None)
    copy = tmp_path / source.name
    nbformat.write(nb, copy)
    shutil.copy(source.with_suffix(".py"), copy.with_suffix(".py"))
    (copy.with_suffix(".py")).write_text(copy.with_suffix(".py").read_text() + "\n# edited\n")
    with pytest.raises(SystemExit, match="not in sync"):
        slides.apply(copy)
