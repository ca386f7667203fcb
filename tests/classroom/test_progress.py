"""`attncourse progress`: one compact table in chapter order, an untouched chapter on one line and
never graded, a chapter with work in it graded exercise by exercise, `progress NN` for one chapter,
and a progress bar only on a terminal.

That an untouched chapter scores 0 without being graded is what grading it gives:
test_grade.py grades a fresh release of every chapter and gets 0, "not implemented", everywhere.
"""

import json
import shutil
import time

import pytest
from classroom_helpers import CHAPTERS, FIXTURE, FIXTURES, cli, has_graded_cells, read

from attncourse.classroom import progress as progress_module
from attncourse.classroom.release import release


@pytest.fixture
def two_chapters(tmp_path):
    """A source folder with the fixture twice (chapters 98 and 99) and a workspace of both."""
    source, workspace = tmp_path / "source", tmp_path / "workspace"
    source.mkdir()
    shutil.copyfile(FIXTURE, source / FIXTURE.name)
    shutil.copyfile(FIXTURE, source / "98_second.ipynb")
    release([], workspace, source=source, nbgrader=False, echo=lambda _: None)
    return source, workspace


def _answer_weighted_average(path):
    nb = read(path)
    nb.cells[6].source = read(FIXTURE).cells[6].source  # the instructor's weighted_average
    path.write_text(json.dumps(nb))


def test_progress_is_one_table_in_chapter_order_with_untouched_chapters_on_one_line(
    two_chapters,
):
    source, workspace = two_chapters
    _answer_weighted_average(workspace / FIXTURE.name)
    status, out, err = cli("progress", "--workspace", workspace, "--source", source)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["chapter", "passed", "points"]
    assert lines[1].split() == ["98_second", "0/2", "0/3", "not", "started"]
    assert lines[2].split() == ["99_pipeline_fixture", "1/2", "1/3"]
    assert lines[3].strip().startswith("✗ stable_softmax: stable_softmax is not implemented yet")
    assert lines[4].strip() == "✓ weighted_average"
    assert lines[5].split() == ["in", "all", "1/4", "1/6"]
    assert len(lines) == 6, out
    assert "grading" not in err and "%|" not in err  # no bar: this is not a terminal


def test_an_untouched_chapter_is_not_graded(two_chapters, monkeypatch):
    source, workspace = two_chapters

    def no_grading(*args, **kwargs):
        raise AssertionError("an untouched workspace was graded")

    monkeypatch.setattr(progress_module, "_grade", no_grading)
    status, out, err = cli("progress", "--workspace", workspace, "--source", source)
    assert status == 0, err
    assert out.count("not started") == 2


def test_progress_nn_shows_one_chapter_and_every_message_in_full(two_chapters):
    source, workspace = two_chapters
    _answer_weighted_average(workspace / FIXTURE.name)
    status, out, err = cli("progress", "99", "--workspace", workspace, "--source", source)
    assert status == 0, err
    assert "98_second" not in out and "in all" not in out and "99_pipeline_fixture" in out
    status, _, err = cli("progress", "7", "--workspace", workspace, "--source", source)
    assert status == 2 and "no chapter 07" in err and "98, 99" in err
    status, _, err = cli("progress", "x", "--workspace", workspace, "--source", source)
    assert status == 2 and "not a chapter number" in err


def test_the_bar_shows_on_a_terminal(two_chapters, capsys):
    source, workspace = two_chapters
    _answer_weighted_average(workspace / FIXTURE.name)
    progress_module.progress(workspace, source=source, bar=True)
    assert "checking" in capsys.readouterr().err


def test_progress_without_a_workspace_says_how_to_make_it(tmp_path):
    status, _, err = cli("progress", "--workspace", tmp_path / "none", "--source", FIXTURES)
    assert status == 2 and "attncourse start" in err


@pytest.mark.skipif(not CHAPTERS, reason="no chapters")
def test_progress_over_every_untouched_chapter_takes_seconds(tmp_path):
    workspace = tmp_path / "workspace"
    release([], workspace, nbgrader=False, echo=lambda _: None)
    start = time.monotonic()
    status, out, err = cli("progress", "--workspace", workspace)
    seconds = time.monotonic() - start
    assert status == 0, err
    graded = [c for c in CHAPTERS if has_graded_cells(c)]
    names = [line.split()[0] for line in out.splitlines()[1:-1]]
    assert names == [c.stem for c in graded]  # chapter order, 09 before 10
    assert out.count("not started") == len(graded)
    assert seconds < 10, f"{seconds:.1f} s"
