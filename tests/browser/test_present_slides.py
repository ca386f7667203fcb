"""``attncourse present 01`` as a lecturer sees it: reveal.js slides, entirely offline (any request
to a host other than this machine fails the test, icon fonts included), the title slide first, a
live widget whose slider the arrow keys move (not the slides), slider labels in full, the summary
slide inside the screen, and no test markers or grading code anywhere; at 1280 x 720 (a projector)
and 1920 x 1080. The screenshots are written to pytest's tmp dir.
"""

import re
import sys
import time
from urllib.parse import urlsplit

import pytest
from browser_helpers import (
    CHAPTERS,
    CUT_LABELS,
    LINUX,
    free_port,
    measure_slider,
    record,
    server_side_nodelay,
    start_server,
    stop_server,
)

CHAPTER = next((p for p in CHAPTERS if p.name.startswith("01_")), None)
SCREENS = [(1280, 720), (1920, 1080)]

# [h, v] of the first slide whose heading matches ``pattern``
FIND_SLIDE = """(pattern) => {
  const stacks = Array.from(document.querySelectorAll('.reveal .slides > section'));
  for (let h = 0; h < stacks.length; h++) {
    const slides = stacks[h].querySelectorAll(':scope > section');
    const all = slides.length ? Array.from(slides) : [stacks[h]];
    for (let v = 0; v < all.length; v++) {
      const heading = all[v].querySelector('h1, h2, h3');
      if (heading && new RegExp(pattern).test(heading.textContent)) return [h, v];
    }
  }
  return null;
}"""

# the first slide (h, v) that holds a widget's slider
FIND_WIDGET = """() => {
  const stacks = Array.from(document.querySelectorAll('.reveal .slides > section'));
  for (let h = 0; h < stacks.length; h++) {
    const slides = stacks[h].querySelectorAll(':scope > section');
    const all = slides.length ? Array.from(slides) : [stacks[h]];
    for (let v = 0; v < all.length; v++) {
      if (all[v].querySelector('.widget-slider')) return [h, v];
    }
  }
  return null;
}"""

# what of the present slide lies below the bottom of the window (its lowest text or image)
BELOW_THE_SCREEN = """() => {
  const slide = Array.from(document.querySelectorAll('.reveal .slides section.present')).pop();
  let lowest = 0;
  for (const node of slide.querySelectorAll('p, li, h1, h2, h3, img, pre, td')) {
    const box = node.getBoundingClientRect();
    if (box.height > 0) lowest = Math.max(lowest, box.bottom);
  }
  return lowest - window.innerHeight;
}"""

ICON_FONT = """async () => {
  const icon = document.createElement('i');
  icon.className = 'fa fa-check';
  document.body.appendChild(icon);
  await document.fonts.ready;
  const family = getComputedStyle(icon).fontFamily;
  const loaded = await document.fonts.load('900 16px "Font Awesome 5 Free"');
  icon.remove();
  return [family, loaded.length];
}"""


@pytest.fixture(scope="module")
def slides(browser, tmp_path_factory):
    if CHAPTER is None:
        pytest.skip("no chapter 01")
    folder, port = tmp_path_factory.mktemp("present"), free_port()
    argv = [sys.executable, "-m", "attncourse", "present", "01", f"--port={port}", "--no-browser"]
    url = f"http://127.0.0.1:{port}/"
    # a style sheet of the slides answers at once (the page itself only once the chapter has run)
    sheet = url + "voila/templates/attncourse-reveal/static/dist/reveal.css"
    process = start_server(argv, folder / "present.log", sheet, 120)
    yield url
    stop_server(process)


def go_to(page, h, v):
    page.evaluate(f"location.hash = '#/{h}/{v}'")
    page.wait_for_timeout(900)  # the slide transition and the fitting


def test_present_01_offline_with_a_live_widget_that_the_arrow_keys_move(slides, page, tmp_path):
    start = time.monotonic()
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(slides, timeout=300_000)
    page.locator(".reveal .slides > section.present").wait_for(timeout=300_000)
    first_slide = time.monotonic() - start
    page.wait_for_timeout(1000)

    sheets = page.evaluate(
        """() => [...document.styleSheets].filter(s => s.href).map(s => {
             try { return [s.href, s.cssRules.length]; } catch (e) { return [s.href, -1]; } })"""
    )
    loaded = {href.rsplit("/", 1)[-1]: rules for href, rules in sheets if rules > 0}
    assert loaded.get("reveal.css", 0) > 100, f"reveal.js's style sheet did not load: {sheets}"
    assert "attncourse.css" in loaded, f"the slides' theme did not load: {sheets}"
    family, faces = page.evaluate(ICON_FONT)
    assert "Font Awesome" in family and faces > 0, f"icons: font {family!r}, {faces} faces"

    title = page.locator(".reveal .slides > section.present h1").first.text_content()
    assert "Chapter 01" in title, f"the first slide is not the title: {title!r}"
    assert page.evaluate("location.hash") in ("", "#/"), "the deck did not start at its first slide"
    text = page.locator(".reveal .slides").inner_text()
    for marker in ("NBVAL_", "BEGIN SOLUTION", "HIDDEN TESTS", "YOUR CODE HERE"):
        assert marker not in text, f"the slides show {marker!r}"

    where = page.evaluate(FIND_WIDGET)
    assert where, "no slide with a widget's slider"
    go_to(page, *where)
    handle = page.locator("section.present .widget-slider .noUi-handle").first
    for _ in range(6):  # the widget is on the section's slide or on one below it
        if handle.count() and handle.is_visible():
            break
        page.keyboard.press("Space")
        page.wait_for_timeout(800)
    else:
        page.screenshot(path=tmp_path / "no-widget.png")
        raise AssertionError(f"no slider on slide {where} or the slides below it")
    where = [int(n) for n in page.evaluate("location.hash").strip("#/").split("/")] + [0]
    where = where[:2]
    widget_slide = page.locator(".reveal .slides section.present").last
    text = widget_slide.inner_text()
    assert "Box(children=" not in text and "Error displaying widget" not in text, text[:300]
    image = widget_slide.locator("img").first
    assert min(image.evaluate("img => [img.naturalWidth, img.naturalHeight]")) > 50

    # the arrow keys on a focused slider move the slider and the figure, not the slides
    hash_before = page.evaluate("location.hash")
    latencies = measure_slider(page, handle, presses=8)
    assert page.evaluate("location.hash") == hash_before, "the arrow keys changed the slide"
    record("present 01 (Voila reveal), keyboard", latencies, first_slide_s=first_slide)
    # the widget's kernel WebSocket has Nagle's algorithm off (attncourse.classroom.nodelay); the
    # page's other connections to Voilà are plain HTTP, which has it on between requests
    if LINUX:  # (the check reads /proc)
        assert True in server_side_nodelay(urlsplit(slides).port), "Nagle's algorithm is on"

    summary = page.evaluate(FIND_SLIDE, r"^\s*Summary")
    assert summary, "no summary slide"
    for width, height in SCREENS:
        page.set_viewport_size({"width": width, "height": height})
        go_to(page, *where)
        page.screenshot(path=tmp_path / f"widget-{width}x{height}.png")
        cut = page.evaluate(CUT_LABELS, ".reveal section.present")
        assert not cut, f"cut labels at {width}x{height}: {cut}"
        go_to(page, *summary)
        page.screenshot(path=tmp_path / f"summary-{width}x{height}.png")
        below = page.evaluate(BELOW_THE_SCREEN)
        assert below <= 0, f"the summary runs {below:.0f} px below the screen at {width}x{height}"
        go_to(page, 0, 0)
        page.screenshot(path=tmp_path / f"title-{width}x{height}.png")
    assert not page.external, f"the slides asked the network for {page.external}"
    assert not [e for e in page.errors if re.search(r"font|fetch|load", e, re.I)], page.errors
