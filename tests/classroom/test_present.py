"""``attncourse present NN``: which chapter, which command, and the files that keep it offline.
(tests/browser/test_present_slides.py opens the slides in a browser.)
"""

import json
import shlex

import pytest
from classroom_helpers import CHAPTERS, NOTEBOOKS, cli

from attncourse.classroom import present as present_module

ASSETS = present_module.ASSETS
STATIC = ASSETS / "voila" / "templates" / "attncourse-reveal" / "static"


def dry_run(*args):
    status, out, err = cli("present", *args, "--dry-run")
    assert status == 0, err
    words = shlex.split(out)
    assert len(out.strip().splitlines()) == 1, out
    return words


@pytest.mark.skipif(not CHAPTERS, reason="no chapter notebooks")
@pytest.mark.parametrize("number", ["1", "01"])
def test_a_chapter_number_names_its_notebook(number):
    words = dry_run(number)
    chapter_01 = next(p for p in CHAPTERS if p.name.startswith("01_"))
    assert str(chapter_01.resolve()) in words
    assert words[0] == f"JUPYTER_PATH={ASSETS}" or words[0].startswith(f"JUPYTER_PATH={ASSETS}:")
    assert words[2:5] == ["-m", "attncourse.classroom.serve", "voila"]
    assert "--template=attncourse-reveal" in words
    assert f"--Voila.config_file_paths={ASSETS}" in words
    assert "--no-browser" not in words


def test_port_no_browser_and_a_notebook_path():
    path = CHAPTERS[0] if CHAPTERS else pytest.skip("no chapter notebooks")
    words = dry_run(str(path), "--port", "9123", "--no-browser")
    assert str(path.resolve()) in words
    assert "--port=9123" in words and "--no-browser" in words


def test_a_bad_chapter_exits_2_and_lists_the_chapters(tmp_path):
    status, out, err = cli("present", "42", "--dry-run")
    assert status == 2
    assert "no chapter 42" in err
    assert all(p.stem in err for p in CHAPTERS)
    status, out, err = cli("present", "intro", "--dry-run")
    assert status == 2 and "not a chapter number" in err
    status, out, err = cli("present", tmp_path / "missing.ipynb", "--dry-run")
    assert status == 2 and "no such notebook" in err
    status, out, err = cli("present", "1", "--source", tmp_path, "--dry-run")
    assert status == 2 and "none (no NN_name.ipynb" in err


def test_another_source_folder(tmp_path):
    chapter = tmp_path / "07_demo.ipynb"
    chapter.write_text((NOTEBOOKS / CHAPTERS[0].name).read_text() if CHAPTERS else "{}")
    words = dry_run("7", "--source", tmp_path)
    assert str(chapter.resolve()) in words


def test_the_slides_need_no_network():
    """reveal.js's style sheets ship with the package; voila.json points the template at them."""
    config = json.loads((ASSETS / "voila.json").read_text())
    reveal = config["VoilaConfiguration"]["resources"]["reveal"]
    prefix = "/voila/templates/attncourse-reveal/static"
    assert reveal["url_prefix"] == prefix
    assert not config["HTMLExporter"]["jquery_url"].startswith("http")
    assert (STATIC / "dist" / "reveal.css").stat().st_size > 10_000
    theme = (STATIC / "dist" / "theme" / f"{reveal['theme']}.css").read_text()
    assert '@import url("white.css")' in theme
    white = (STATIC / "dist" / "theme" / "white.css").read_text()
    assert "http" not in white.replace("http://www.w3.org", ""), "the theme fetches something"
    assert (STATIC / "LICENSE-reveal.js").is_file()
