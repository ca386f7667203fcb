"""`attncourse site`: the static HTML site of the course.

The site is built once from the chapter notebooks in notebooks/ (whichever are there), and once from
a small synthetic notebook that has what the chapters may have but do not all have yet: a widget
whose output carries its picture, a progress bar, an exercise with a hidden test.
"""

import base64
import html.parser
import io
import re
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from classroom_helpers import CHAPTERS, cli, read

from attncourse.classroom.site import MARKER, prepare_notebook

SOLUTION = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MATHJAX = "_static/mathjax/tex-chtml.js"


# ------------------------------------------------------------------------------- HTML reading


class Page(html.parser.HTMLParser):
    """What the tests read from one HTML file: resources, links, ids, text, maths, widget notes."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.path = path
        self.resources = []  # (tag, url) that the browser loads to render the page
        self.links = []  # <a href>
        self.ids, self.images, self.maths, self.notes = set(), [], [], 0
        self.text = io.StringIO()
        self._math_depth = 0  # > 0 inside an element of class "math"
        self._math = io.StringIO()
        self._stack = []
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and "href" in attrs:
            self.links.append(attrs["href"])
        if tag in ("img", "script") and attrs.get("src"):
            self.resources.append((tag, attrs["src"]))
            if tag == "img":
                self.images.append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            self.resources.append((tag, attrs["href"]))
        classes = (attrs.get("class") or "").split()
        if "attncourse-widget" in classes:
            self.notes += 1
        if tag in ("span", "div"):  # always closed explicitly: a stack of them stays in step
            is_math = "math" in classes
            self._stack.append(is_math)
            self._math_depth += is_math

    def handle_endtag(self, tag):
        if tag not in ("span", "div") or not self._stack:
            return
        if self._stack.pop():
            self._math_depth -= 1
            if self._math_depth == 0:
                self.maths.append(self._math.getvalue())
                self._math = io.StringIO()

    def handle_data(self, data):
        self.text.write(data)
        if self._math_depth:
            self._math.write(data)

    def plain_text(self) -> str:
        return " ".join(self.text.getvalue().split())

    def lines(self) -> set[str]:
        """Every line of the page's text (code blocks keep theirs), whitespace collapsed."""
        return {" ".join(line.split()) for line in self.text.getvalue().splitlines()}


def is_external(url: str) -> bool:
    return bool(urlsplit(url).scheme) or url.startswith("//")


def local_target(page: Path, url: str) -> tuple[Path, str]:
    """(file, fragment) that a relative URL on ``page`` points to."""
    parts = urlsplit(url)
    target = page if not parts.path else (page.parent / unquote(parts.path))
    return target.resolve(), unquote(parts.fragment)


def solution_lines(nb) -> set[str]:
    """Lines inside solution or hidden-test regions that appear nowhere outside them."""
    inside, outside = set(), set()
    for cell in nb.cells:
        region = None
        for line in cell.source.splitlines():
            if any(b in line for b, _ in (SOLUTION, HIDDEN)):
                region = True
            elif any(e in line for _, e in (SOLUTION, HIDDEN)):
                region = None
            elif line.strip():
                (inside if region else outside).add(" ".join(line.split()))
    return {line for line in inside - outside if len(line) >= 12}


def png_outputs(nb) -> int:
    """Figures a page must show: image outputs of cells that are not exercises."""
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or (cell.get("metadata", {}).get("nbgrader") or {}):
            continue
        for output in cell.get("outputs", []):
            count += any(k.startswith("image/") for k in output.get("data", {}))
    return count


def is_widget(output) -> bool:
    data = output.get("data", {})
    return WIDGET_VIEW in data and not re.search(r"\[\d\d:\d\d", data.get("text/plain", ""))


# ------------------------------------------------------------------------- the chapters' site


@pytest.fixture(scope="module")
def chapters_site(tmp_path_factory):
    if not CHAPTERS:
        pytest.skip("no chapter notebooks in notebooks/")
    out = tmp_path_factory.mktemp("site") / "site"
    start = time.perf_counter()
    status, stdout, stderr = cli("site", "--out", out)
    seconds = time.perf_counter() - start
    assert status == 0, stderr + stdout[-3000:]
    print(f"attncourse site: {len(CHAPTERS)} chapters built in {seconds:.1f} s")
    return out, stdout


def test_the_build_reports_each_step(chapters_site):
    _, stdout = chapters_site
    for notebook in CHAPTERS:
        assert f"prepared {notebook.stem}:" in stdout
    assert "reading sources" in stdout  # Sphinx's own progress
    assert "wrote the site:" in stdout.splitlines()[-1]


def test_the_front_page_links_every_chapter(chapters_site):
    out, _ = chapters_site
    front = Page(out / "index.html")
    for notebook in CHAPTERS:
        assert f"{notebook.stem}.html" in front.links, notebook.stem
    assert "attncourse start" in front.plain_text()


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_a_page_with_its_figures(notebook, chapters_site):
    out, _ = chapters_site
    nb = read(notebook)
    page = Page(out / f"{notebook.stem}.html")
    title = next(line[2:] for line in nb.cells[0].source.splitlines() if line.startswith("# "))
    assert " ".join(title.split()) in page.plain_text()
    figures = [src for src in page.images if src.startswith("_images/")]
    assert len(figures) == png_outputs(nb), "every stored figure is on the page, once"
    for src in figures:
        image = out / src
        assert image.is_file() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", src


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_maths_is_typeset_by_the_bundled_mathjax(notebook, chapters_site):
    out, _ = chapters_site
    nb = read(notebook)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    markdown = re.sub(r"\n> ?", "\n", markdown)  # a formula may continue on a quoted line
    display = re.findall(r"\$\$(.+?)\$\$", markdown, re.S)
    # inline maths may run over a line break, never over a blank line
    inline = re.findall(
        r"(?<![$\\])\$((?:[^$\n]|\n(?!\n))+?)\$(?!\$)",
        re.sub(r"\$\$.+?\$\$", "", markdown, flags=re.S),
    )
    if not inline and not display:
        pytest.skip(f"{notebook.stem} has no maths")
    page = Page(out / f"{notebook.stem}.html")
    assert ("script", MATHJAX) in page.resources and (out / MATHJAX).is_file()
    maths = {" ".join(m.split()) for m in page.maths}
    for tex in inline:
        assert f"\\({' '.join(tex.split())}\\)" in maths, tex
    assert len(page.maths) >= len(inline) + len(display)


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_or_hidden_test_appears(notebook, chapters_site):
    out, _ = chapters_site
    nb = read(notebook)
    hidden = solution_lines(nb)
    page = Page(out / f"{notebook.stem}.html")
    assert not hidden & page.lines()
    if hidden:  # the exercises are there, as students get them
        assert "raise NotImplementedError()" in page.lines()


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_the_code_shows_no_test_markers_or_grading_regions(notebook, chapters_site):
    out, _ = chapters_site
    page = Page(out / f"{notebook.stem}.html")
    assert not [line for line in page.lines() if re.fullmatch(r"#\s*NBVAL_[A-Z_]+", line)]
    text = " ".join(page.plain_text().split())
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "MARK SCHEME"):
        assert marker not in text, marker
    checked = [c for c in read(notebook).cells if c.source.startswith("# NBVAL_CHECK_OUTPUT\n")]
    if checked:  # the notebook keeps its markers; the page shows the code after them
        shown = checked[0].source.splitlines()[1]
        assert " ".join(shown.split()) in text


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_widgets_show_how_to_run_them_live(notebook, chapters_site):
    out, _ = chapters_site
    nb = read(notebook)
    widgets = sum(is_widget(o) for c in nb.cells for o in c.get("outputs", []))
    page = Page(out / f"{notebook.stem}.html")
    assert page.notes == widgets
    assert not re.search(r"0%\|\s*\| 0/\d+ \[00:00", page.plain_text()), "a progress bar at 0 %"


def test_no_broken_internal_link(chapters_site):
    out, _ = chapters_site
    broken, pages = [], {}
    for path in sorted(out.glob("*.html")):  # the pages (_static/ holds the theme's templates)
        page = pages.setdefault(path, Page(path))
        for url in [u for _, u in page.resources] + page.links:
            if is_external(url) or url.startswith(("mailto:", "data:", "javascript:")):
                continue
            target, fragment = local_target(path, url)
            if not target.exists():
                broken.append(f"{path.name}: {url}")
            elif fragment and target.suffix == ".html":
                if target not in pages:
                    pages[target] = Page(target)
                if fragment not in pages[target].ids:
                    broken.append(f"{path.name}: {url} (no id {fragment!r})")
    for css in out.rglob("*.css"):
        text = re.sub(r"/\*.*?\*/", "", css.read_text(encoding="utf-8"), flags=re.S)
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", text):
            local = not is_external(url) and not url.startswith("data:")
            if local and not local_target(css, url)[0].exists():
                broken.append(f"{css.relative_to(out)}: {url}")
    assert not broken, broken
    assert len(pages) >= len(CHAPTERS) + 1


def test_nothing_outside_the_site_is_needed_to_render_a_page(chapters_site):
    out, _ = chapters_site
    outside = []
    for path in sorted(out.glob("*.html")):
        outside += [f"{path.name}: <{t}> {u}" for t, u in Page(path).resources if is_external(u)]
    for css in out.rglob("*.css"):
        text = re.sub(r"/\*.*?\*/", "", css.read_text(encoding="utf-8"), flags=re.S)
        outside += [f"{css.name}: {u}" for u in re.findall(r"url\(\s*['\"]?(https?:|//)", text)]
        outside += [f"{css.name}: @import" for _ in re.findall(r"@import\s+['\"]?https?:", text)]
    assert not outside, outside


# ---------------------------------------------------------- a synthetic notebook, end to end


def tiny_png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode()


PNG = tiny_png()
SECRET = "secret_solution_marker = 42"
HIDDEN_CALL = "check_answer(answer, seed=12345)"


def synthetic_notebook():
    code, md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
    out = nbformat.v4.new_output
    widget = {"model_id": "0" * 32, "version_major": 2, "version_minor": 0}
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        md("# Chapter 01 · A synthetic chapter\n\nInline $\\alpha_i \\ge 0$ and\n\n$$H = 1$$"),
        code("plot()", outputs=[out("display_data", data={"image/png": PNG, "text/plain": "F"})]),
        code(
            "widget_with_picture()",
            outputs=[
                out("display_data", data={WIDGET_VIEW: widget, "image/png": PNG, "text/plain": "V"})
            ],
        ),
        code(
            "widget_without_picture()",
            outputs=[out("display_data", data={WIDGET_VIEW: widget, "text/plain": "VBox()"})],
        ),
        code(
            "train()",
            outputs=[
                out(
                    "display_data",
                    data={WIDGET_VIEW: widget, "text/plain": "run:   0%|   | 0/9 [00:00<?, ?it/s]"},
                ),
                out("stream", name="stdout", text="trained\n"),
            ],
        ),
        code(
            f"def answer():\n    ### BEGIN SOLUTION\n    {SECRET}\n    ### END SOLUTION",
            metadata={
                "nbgrader": {
                    "grade": False,
                    "grade_id": "answer",
                    "locked": False,
                    "schema_version": 3,
                    "solution": True,
                }
            },
        ),
        code(
            f"check_answer(answer)\n### BEGIN HIDDEN TESTS\n{HIDDEN_CALL}\n### END HIDDEN TESTS",
            outputs=[out("stream", name="stdout", text="all 7 checks passed\n")],
            metadata={
                "nbgrader": {
                    "grade": True,
                    "grade_id": "answer_test",
                    "locked": True,
                    "points": 1,
                    "schema_version": 3,
                    "solution": False,
                }
            },
        ),
    ]
    return nb


def test_prepare_notebook_keeps_what_students_may_see():
    nb, widgets, figures, exercises = prepare_notebook(synthetic_notebook())
    assert (widgets, figures, exercises) == (2, 1, 1)
    source = "\n".join(c.source for c in nb.cells)
    assert SECRET not in source and HIDDEN_CALL not in source
    assert "raise NotImplementedError()" in source and "check_answer(answer)" in source
    outputs = [
        [sorted(o.get("data", {})) or o.output_type for o in c.outputs] for c in nb.cells[1:]
    ]
    assert outputs == [
        [["image/png", "text/plain"]],  # a figure, untouched
        [["image/png"], ["text/html"]],  # the widget's picture, then the note
        [["text/html"]],  # the note alone
        ["stream"],  # the progress bar is gone, the printed line stays
        [],  # the exercise: no output of the solution
        [],
    ]


@pytest.fixture(scope="module")
def synthetic_site(tmp_path_factory):
    source = tmp_path_factory.mktemp("synthetic")
    nbformat.write(synthetic_notebook(), source / "01_synthetic.ipynb")
    out = tmp_path_factory.mktemp("synthetic-site") / "site"
    out.mkdir()
    (out / MARKER).write_text("")  # as if built before: the new build replaces it
    (out / "stale.html").write_text("from an older build")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in source.iterdir())
    status, stdout, stderr = cli("site", "--out", out, "--source", source)
    assert status == 0, stderr + stdout[-3000:]
    assert sorted((p.name, p.stat().st_mtime_ns) for p in source.iterdir()) == before
    return out


def test_a_widget_shows_its_stored_picture_and_a_note(synthetic_site):
    page = Page(synthetic_site / "01_synthetic.html")
    assert len([s for s in page.images if s.startswith("_images/")]) == 2  # the plot, the widget
    assert page.notes == 2 and page.plain_text().count("attncourse start") >= 2
    assert "Above: its figure as the notebook stored it" in page.plain_text()
    text = page.plain_text()
    assert SECRET not in text and HIDDEN_CALL not in text and "all 7 checks passed" not in text
    assert "\\(\\alpha_i \\ge 0\\)" in page.maths and "trained" in text


def test_a_new_build_replaces_the_old_site_and_leaves_the_source_alone(synthetic_site):
    assert not (synthetic_site / "stale.html").exists()
    assert (synthetic_site / MARKER).exists() and (synthetic_site / "index.html").exists()


# ---------------------------------------------------------------------------------- bad input


def test_a_missing_source_folder_is_refused(tmp_path):
    status, stdout, stderr = cli("site", "--out", tmp_path / "site", "--source", tmp_path / "no")
    assert status == 2 and "--source" in stderr and "no such folder" in stderr
    assert not (tmp_path / "site").exists()


def test_a_source_folder_without_notebooks_is_refused(tmp_path):
    status, _, stderr = cli("site", "--out", tmp_path / "site", "--source", tmp_path)
    assert status == 2 and "no notebooks" in stderr


@pytest.mark.parametrize("case", ["a file", "below a file", "not writable", "someone's folder"])
def test_an_unusable_out_folder_is_refused(case, tmp_path):
    (tmp_path / "file").write_text("")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "notes.txt").write_text("keep me")
    out, message = {
        "a file": (tmp_path / "file", "exists and is not a folder"),
        "below a file": (tmp_path / "file" / "site", "cannot write there"),
        "not writable": (Path("/sys/attncourse-site"), "cannot write there"),
        "someone's folder": (tmp_path / "folder", "not empty"),
    }[case]
    status, stdout, stderr = cli("site", "--out", out)
    assert status == 2 and f"--out {out}" in stderr and message in stderr, stderr
    assert "prepared" not in stdout  # refused before any work
    assert (tmp_path / "folder" / "notes.txt").read_text() == "keep me"


def test_both_editions_are_built_and_every_page_links_to_its_other_edition(chapters_site):
    out, stdout = chapters_site
    assert "site (简体中文)" in stdout and (out / "zh_CN" / "index.html").is_file()
    for page in ["index", *(p.stem for p in CHAPTERS)]:
        english = (out / f"{page}.html").read_text(encoding="utf-8")
        chinese = (out / "zh_CN" / f"{page}.html").read_text(encoding="utf-8")
        assert f'<a href="zh_CN/{page}.html">简体中文</a>' in english, page
        assert f'<a href="../{page}.html">English</a>' in chinese, page
    chapter = next(p.stem for p in CHAPTERS if p.stem.startswith("01_"))
    assert "第 01 章" in (out / "zh_CN" / f"{chapter}.html").read_text(encoding="utf-8")
