"""``attncourse present 01`` as a lecturer sees it: reveal.js slides, offline, with the title slide
first and a live widget whose figure follows its slider (moved with the mouse: in the slides the
arrow keys belong to reveal.js).
"""

import sys
import time

import pytest
from browser_helpers import (
    CHAPTERS,
    free_port,
    measure_slider_clicks,
    record,
    start_server,
    stop_server,
)

CHAPTER = next((p for p in CHAPTERS if p.name.startswith("01_")), None)
# links of Voilà's reveal template that nothing on the slides uses (icon fonts); offline they fail
HARMLESS = ("https://cdn.jsdelivr.net/npm/@fortawesome/",)


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


def test_present_01_shows_slides_offline_with_a_live_widget(slides, page, tmp_path):
    start = time.monotonic()
    page.goto(slides, timeout=300_000)
    page.locator(".reveal .slides > section.present").wait_for(timeout=300_000)
    first_slide = time.monotonic() - start
    page.wait_for_timeout(1000)
    page.screenshot(path=tmp_path / "title.png")

    sheets = page.evaluate(
        """() => [...document.styleSheets].filter(s => s.href).map(s => {
             try { return [s.href, s.cssRules.length]; } catch (e) { return [s.href, -1]; } })"""
    )
    loaded = {href.rsplit("/", 1)[-1]: rules for href, rules in sheets if rules > 0}
    assert loaded.get("reveal.css", 0) > 100, f"reveal.js's style sheet did not load: {sheets}"
    assert "attncourse.css" in loaded, f"the slides' theme did not load: {sheets}"
    needed = [u for u in page.external if not u.startswith(HARMLESS)]
    assert not needed, f"the slides asked the network for {needed}"

    title = page.locator(".reveal .slides > section.present h1").first.text_content()
    assert "Chapter 01" in title, f"the first slide is not the title: {title!r}"
    assert page.evaluate("location.hash") in ("", "#/"), "the deck did not start at its first slide"

    handle = page.locator("section.present .widget-slider .noUi-handle").first
    for _ in range(60):  # Space walks through every slide, sub-slides included
        if handle.count() and handle.is_visible():
            break
        page.keyboard.press("Space")
        page.wait_for_timeout(150)
    else:
        raise AssertionError("no slide shows a slider widget")
    page.wait_for_timeout(800)  # the slide transition
    widget_slide = page.locator(".reveal .slides section.present").last
    page.screenshot(path=tmp_path / "widget.png")
    text = widget_slide.inner_text()
    assert "Box(children=" not in text and "Error displaying widget" not in text, text[:300]
    image = widget_slide.locator("img").first
    assert min(image.evaluate("img => [img.naturalWidth, img.naturalHeight]")) > 50

    # a click on the slider's track must move the figure (the arrow keys move the slides)
    latencies = measure_slider_clicks(page, handle, clicks=10)
    record("present 01 (Voila reveal)", latencies, first_slide_s=first_slide)
    page.screenshot(path=tmp_path / "widget-moved.png")
