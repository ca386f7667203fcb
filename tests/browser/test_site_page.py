"""The static site's chapter 01 page, opened from disk as a reader opens it: its figures load, its
maths is typeset (MathJax, bundled), and nothing is fetched from the network.

The site is built here from chapter 01 alone (``attncourse site --source``), which is what the
page needs and takes seconds; tests/classroom/test_site.py checks the whole site's pages and links.
"""

import shutil
import subprocess
import sys

import nbformat
import pytest
from browser_helpers import CHAPTERS

CHAPTER = next((p for p in CHAPTERS if p.name.startswith("01_")), None)


@pytest.fixture(scope="module")
def site(browser, tmp_path_factory):
    if CHAPTER is None:
        pytest.skip("no chapter 01")
    folder = tmp_path_factory.mktemp("site")
    (folder / "source").mkdir()
    shutil.copy(CHAPTER, folder / "source" / CHAPTER.name)
    out = folder / "site"
    result = subprocess.run(
        [sys.executable, "-m", "attncourse", "site", "--out", out, "--source", folder / "source"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def test_chapter_01_page_shows_its_figures_and_maths_offline(site, page, tmp_path):
    chapter_page = site / f"{CHAPTER.stem}.html"
    assert chapter_page.is_file(), sorted(p.name for p in site.iterdir())
    page.goto(chapter_page.as_uri())
    page.locator("mjx-container").first.wait_for(timeout=60_000)  # MathJax has typeset
    page.wait_for_load_state("load")
    page.screenshot(path=tmp_path / "top.png")

    images = page.evaluate(
        """() => [...document.querySelectorAll('main img, article img')].map(
             img => [img.getAttribute('src'), img.complete, img.naturalWidth])"""
    )
    stored = sum(
        "image/png" in output.get("data", {})
        for cell in nbformat.read(CHAPTER, as_version=4).cells
        for output in cell.get("outputs", [])
    )
    broken = [src for src, complete, width in images if not (complete and width > 0)]
    assert not broken, f"images that do not load: {broken}"
    assert len(images) >= max(1, stored - 1), f"{len(images)} images shown, {stored} stored"

    maths = page.evaluate("() => document.querySelectorAll('mjx-container').length")
    errors = page.evaluate("() => document.querySelectorAll('mjx-merror, .MathJax_Error').length")
    assert maths >= 20 and errors == 0, f"{maths} formulas typeset, {errors} with errors"
    assert not page.external, f"the page asked the network for {page.external[:5]}"

    figure = page.locator("main img, article img").first
    figure.scroll_into_view_if_needed()
    page.screenshot(path=tmp_path / "figure.png")
